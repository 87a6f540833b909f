import http from 'node:http';
import https from 'node:https';

/** A failed answer: its status and the server's `detail` (or the body's text). */
export class JsonPostError extends Error {
  override readonly name = 'JsonPostError';
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(`the bench server answered ${status}: ${detail}`);
  }
}

/**
 * JSON POSTs over one kept-alive connection pool, for the GDB byte streams (decision 0560): each
 * GDB packet costs a few of these, and node's `http.request` with a keep-alive agent answers one
 * on loopback in ~0.5 ms where the global `fetch` took 5 to 10 ms on the same machine
 * (perf/debug-remote.bench.ts). The body is written in one piece with its length.
 */
export class JsonPoster {
  private readonly agent: http.Agent;
  private readonly base: URL;

  constructor(serverUrl: string, private readonly token: string) {
    this.base = new URL(serverUrl.replace(/\/+$/, '') + '/');
    this.agent = this.base.protocol === 'https:' ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
  }

  /** POSTs `body` (JSON, or none) to `route`; answers the parsed JSON, or throws `JsonPostError` for a non-2xx answer. */
  post<T>(route: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const url = new URL(route.replace(/^\//, ''), this.base);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const request = url.protocol === 'https:' ? https.request : http.request;
    return new Promise<T>((resolve, reject) => {
      const req = request(
        url,
        {
          method: 'POST',
          agent: this.agent,
          signal,
          headers: { authorization: `Bearer ${this.token}`, ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : { 'content-length': 0 }) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) {
              try {
                resolve(JSON.parse(text) as T);
              } catch (err) {
                reject(err as Error);
              }
              return;
            }
            let detail = text;
            try {
              const parsed = JSON.parse(text) as { detail?: unknown };
              detail = typeof parsed.detail === 'string' ? parsed.detail : JSON.stringify(parsed.detail);
            } catch {
              /* not JSON: the text is the detail */
            }
            reject(new JsonPostError(status, detail));
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Closes the kept-alive connections. */
  close(): void {
    this.agent.destroy();
  }
}
