import net from 'node:net';

/**
 * HTTP/1.1 over a bare `node:net` socket: the only way to send what `fetch` refuses to (a body
 * shorter or longer than its `Content-Length`, chunked framing that stops, no content type at
 * all) and to read exactly what the server wrote back, interim `100 Continue` included.
 */
export interface RawResponse {
  status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
}

export interface RawExchange {
  /** Every response read off the connection, in order (interim 1xx answers included). */
  responses: RawResponse[];
  /** Bytes after the last complete response (an answer cut short). */
  leftover: Buffer;
}

export interface RawRequest {
  method: string;
  path: string;
  headers: Record<string, string | number>;
  body?: Buffer;
  /**
   * How the request ends. `complete` (default): everything is sent, the connection stays open
   * until the server closes it (every request says `Connection: close`). `hang-up`: the client
   * half-closes right after writing (a body shorter than its declared length, chunked framing
   * that never ends). `expect-continue`: the headers go first and the body only after an
   * interim `100 Continue`; a final answer instead means the body is never sent.
   */
  ending?: 'complete' | 'hang-up' | 'expect-continue';
}

/** Bound on one exchange: a server that neither answers nor closes is a hang, reported as one. */
const EXCHANGE_LIMIT_MS = 15_000;

/** Sends one request on a fresh connection and collects what comes back until the server closes it. */
export function rawExchange(origin: string, request: RawRequest): Promise<RawExchange> {
  const url = new URL(origin);
  const head =
    `${request.method} ${request.path} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\n` +
    Object.entries(request.headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('') +
    '\r\n';
  const body = request.body ?? Buffer.alloc(0);
  const ending = request.ending ?? 'complete';
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    const chunks: Buffer[] = [];
    let bodySent = ending !== 'expect-continue';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer and no close within ${EXCHANGE_LIMIT_MS} ms for ${request.method} ${request.path} (${ending}); got so far: ${Buffer.concat(chunks).toString('latin1').slice(0, 300)}`));
    }, EXCHANGE_LIMIT_MS);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (!bodySent) {
        const { responses } = parseResponses(Buffer.concat(chunks));
        if (responses.length > 0) {
          bodySent = true;
          // Only an interim 100 asks for the body; a final answer means it is not wanted.
          if (responses[0]!.status === 100 && responses.length === 1) socket.write(body);
        }
      }
    });
    // A reset after the server answered (it closed while we were still writing) is an ending too.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(parseResponses(Buffer.concat(chunks)));
    });
    socket.write(head);
    if (ending !== 'expect-continue') socket.write(body);
    if (ending === 'hang-up') socket.end();
  });
}

/** Splits what a server wrote into responses (Content-Length, chunked, or until close). */
export function parseResponses(data: Buffer): RawExchange {
  const responses: RawResponse[] = [];
  let at = 0;
  for (;;) {
    const headEnd = data.indexOf('\r\n\r\n', at);
    if (headEnd < 0) break;
    const lines = data.subarray(at, headEnd).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1] ?? Number.NaN);
    if (!Number.isInteger(status)) break;
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    let next = headEnd + 4;
    let body: Buffer;
    if (status < 200 || status === 204 || status === 304) {
      body = Buffer.alloc(0);
    } else if (headers['transfer-encoding']?.toLowerCase().includes('chunked')) {
      const decoded = decodeChunked(data, next);
      if (!decoded) break;
      ({ body, next } = decoded);
    } else if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      if (data.length < next + length) break;
      body = data.subarray(next, next + length);
      next += length;
    } else {
      body = data.subarray(next);
      next = data.length;
    }
    responses.push({ status, headers, body });
    at = next;
  }
  return { responses, leftover: data.subarray(at) };
}

function decodeChunked(data: Buffer, from: number): { body: Buffer; next: number } | undefined {
  const parts: Buffer[] = [];
  let at = from;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
    if (!Number.isInteger(size)) return undefined;
    at = lineEnd + 2;
    if (size === 0) {
      const end = data.indexOf('\r\n', at);
      return end < 0 ? undefined : { body: Buffer.concat(parts), next: end + 2 };
    }
    if (data.length < at + size + 2) return undefined;
    parts.push(data.subarray(at, at + size));
    at += size + 2;
  }
}
