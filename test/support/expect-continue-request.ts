import http from 'node:http';

/** What a client sending `Expect: 100-continue` saw: whether it was asked for the body, then the answer. */
export interface ContinueOutcome {
  continued: boolean;
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * A POST to `url` with `Expect: 100-continue` declaring `declaredBytes` (default: the body's
 * length): `body` is sent only if the server says 100. The bench's and the relay's tests of it.
 */
export function expectContinue(url: URL, headers: Record<string, string>, body: Buffer, declaredBytes = body.length): Promise<ContinueOutcome> {
  return new Promise((resolve, reject) => {
    let continued = false;
    const req = http.request(url, { method: 'POST', headers: { ...headers, expect: '100-continue', 'content-length': String(declaredBytes) } });
    req.on('continue', () => {
      continued = true;
      req.end(body);
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        resolve({ continued, status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') });
        req.destroy();
      });
    });
    req.on('error', reject);
    req.flushHeaders();
  });
}
