import http from 'node:http';
import https from 'node:https';
import { z } from 'zod';
import { type Clock, systemClock } from '../../core/clock.js';

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

/** No answer in time: the connection is dead or the server stuck (the request is abandoned). */
export class JsonPostTimeout extends Error {
  override readonly name = 'JsonPostTimeout';
}

/** How long past its own long-poll wait a request may take (host ms) before it is given up as dead. */
export const REQUEST_MARGIN_MS = 30_000;

/**
 * JSON POSTs over one kept-alive connection pool, for the GDB byte streams (decision 0560): each
 * GDB packet costs a few of these, and node's `http.request` with a keep-alive agent answers one
 * on loopback in ~0.5 ms where the global `fetch` took 5 to 10 ms on the same machine
 * (perf/debug-remote.bench.ts). The body is written in one piece with its length. Every request
 * is bounded (its long-poll wait plus `REQUEST_MARGIN_MS`): a kept-alive connection that died
 * silently would otherwise hang its caller forever.
 */
export class JsonPoster {
  private readonly agent: http.Agent;
  private readonly base: URL;
  private readonly clock: Clock;
  private readonly marginMs: number;

  constructor(
    serverUrl: string,
    private readonly token: string,
    options: { clock?: Clock; marginMs?: number } = {},
  ) {
    this.base = new URL(serverUrl.replace(/\/+$/, '') + '/');
    this.agent = this.base.protocol === 'https:' ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
    this.clock = options.clock ?? systemClock;
    this.marginMs = options.marginMs ?? REQUEST_MARGIN_MS;
  }

  /**
   * POSTs `body` (JSON, or none) to `route`; answers the JSON parsed by `schema`, or throws
   * `JsonPostError` for a non-2xx answer and `JsonPostTimeout` when nothing came back within
   * `waitMs` (the server's long-poll wait, 0 for none) plus the margin.
   */
  post<S extends z.ZodType>(route: string, schema: S, body?: unknown, options: { signal?: AbortSignal; waitMs?: number } = {}): Promise<z.infer<S>> {
    const url = new URL(route.replace(/^\//, ''), this.base);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const request = url.protocol === 'https:' ? https.request : http.request;
    const limitMs = (options.waitMs ?? 0) + this.marginMs;
    return new Promise<z.infer<S>>((resolve, reject) => {
      const req = request(
        url,
        {
          method: 'POST',
          agent: this.agent,
          signal: options.signal,
          headers: { authorization: `Bearer ${this.token}`, ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : { 'content-length': 0 }) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', reject);
          res.on('end', () => {
            this.clock.clearTimeout(timer);
            const text = Buffer.concat(chunks).toString('utf8');
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) {
              try {
                resolve(schema.parse(JSON.parse(text)));
              } catch (err) {
                reject(new Error(`the bench server's answer to POST ${route} is not what it should be: ${(err as Error).message}`, { cause: err }));
              }
              return;
            }
            reject(new JsonPostError(status, detailOf(text)));
          });
        },
      );
      const timer = this.clock.setTimeout(() => req.destroy(new JsonPostTimeout(`POST ${route}: no answer from the bench server after ${limitMs} ms (its connection is dead, or the server is stuck)`)), limitMs);
      req.on('error', (err) => {
        this.clock.clearTimeout(timer);
        reject(err);
      });
      req.end(payload);
    });
  }

  /** Closes the kept-alive connections. */
  close(): void {
    this.agent.destroy();
  }
}

/** A refusal's `detail` (FastAPI's shape), or the body's text when it is not JSON. */
function detailOf(text: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text;
  }
  const refusal = refusalSchema.safeParse(parsed);
  if (!refusal.success) return text;
  return typeof refusal.data.detail === 'string' ? refusal.data.detail : JSON.stringify(refusal.data.detail);
}

/** FastAPI's error body: `detail` a string, or a 422's list of `{loc, msg, type}`. */
const refusalSchema = z.object({ detail: z.unknown() });
