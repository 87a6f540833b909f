import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { Duplex } from 'node:stream';

/**
 * The HTTP server's `clientError` listener (`server.on('clientError', answerMalformedRequest)`):
 * a request node's parser cannot read never reaches express, and node's own answer is a bare
 * `400` without a body. This one is the services' wire format instead: `{"detail": ...}` with
 * `Connection: close`, and the socket is closed (its framing is lost, nothing after it can be read).
 *
 * Only when nothing was written on the connection yet, as node does: bytes after a body cut short
 * by its `Content-Length` are such a request, parsed while the answer to the one before is still
 * being prepared; that answer is dropped with the connection, as without a listener.
 */
export function answerMalformedRequest(err: Error & { code?: string }, socket: Duplex & { bytesWritten?: number }): void {
  // The client is gone (or going), or an answer already started: nothing clean can be delivered.
  if (err.code === 'ECONNRESET' || !socket.writable || socket.bytesWritten !== 0) {
    socket.destroy();
    return;
  }
  const status = statusOf(err.code);
  answerOnSocketAndClose(socket, status, detailOf(status));
}

/**
 * Writes `status` with `{"detail": detail}` and `Connection: close` straight on `socket`, as the
 * last bytes of the connection, and closes it once they are written (not when the client closes:
 * a client that never reads holds nothing). For answers node's HTTP server cannot give itself;
 * the caller has made sure nothing else was, or will be, written on the connection before them.
 */
export function answerOnSocketAndClose(socket: Duplex, status: number, detail: string): void {
  const body = JSON.stringify({ detail });
  socket.once('finish', () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

/**
 * The HTTP server's `connect` listener (`server.on('connect', answerConnect)`): neither service is a
 * proxy, and without a listener node closed a `CONNECT` without a word. Answered 405 in the
 * services' wire format with an empty `Allow` (RFC 9110 section 10.2.1: the target, a tunnel to
 * `host:port`, allows no method), and closed: whatever follows the head is tunnel bytes, not HTTP.
 */
export function answerConnect(_req: IncomingMessage, socket: Duplex): void {
  socket.on('error', () => undefined);
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify({ detail: STATUS_CODES[405] });
  socket.once('finish', () => socket.destroy());
  socket.end(
    'HTTP/1.1 405 Method Not Allowed\r\n' +
      'Allow: \r\n' +
      'Content-Type: application/json; charset=utf-8\r\n' +
      'X-Content-Type-Options: nosniff\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

/** The statuses node itself chooses: 431 for headers over `maxHeaderSize`, 408 for a request not sent in time. */
function statusOf(code: string | undefined): number {
  if (code === 'HPE_HEADER_OVERFLOW') return 431;
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 408;
  return 400;
}

/** What the client may read: node's parser codes name internals, so only the status' meaning. */
function detailOf(status: number): string {
  if (status === 400) return 'Invalid HTTP request received.';
  return STATUS_CODES[status] ?? 'Bad Request';
}

/**
 * The HTTP server's `checkExpectation` listener (`server.on('checkExpectation', ...)`): a request
 * whose `Expect` is anything but `100-continue`. Node's own answer is a 417 with an empty chunked
 * body; this one is the services' wire format, and the connection closes (the body was never asked
 * for, so whatever the client sends after the head cannot be framed).
 */
export function answerUnmetExpectation(_req: IncomingMessage, res: ServerResponse): void {
  const body = JSON.stringify({ detail: 'Expectation Failed: the only expectation understood is "Expect: 100-continue"' });
  res.writeHead(417, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'X-Content-Type-Options': 'nosniff', Connection: 'close' });
  res.end(body);
}

/**
 * An HTTP/1.1 request without `Host`, or one with two, is a 400 (RFC 9112 section 3.2), in the services' wire format.
 * Node's own check (`requireHostHeader`, which `listen` turns off for this) answers an empty chunked
 * 400; first middleware of both apps, so the `Expect: 100-continue` path goes through it too
 * (without `100 Continue` first: `continueListener`).
 */
export function requireHost(req: Request, res: Response, next: NextFunction): void {
  if (!lacksOneHost(req)) {
    next();
    return;
  }
  res.status(400).set('Connection', 'close').json({ detail: detailOf(400) });
}

/**
 * Whether `requireHost` refuses the request: HTTP/1.1 without `Host`, or any request with more
 * than one (RFC 9112 section 3.2: a 400 either way; node keeps the first and drops the others, so
 * two parties reading the head could route it to different hosts).
 */
export function lacksOneHost(req: IncomingMessage): boolean {
  if (req.headers.host === undefined) return req.httpVersion === '1.1';
  // On every request of both services: a length test before any lower-casing.
  let hosts = 0;
  for (let k = 0; k < req.rawHeaders.length; k += 2) {
    const name = req.rawHeaders[k] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') hosts++;
  }
  return hosts > 1;
}
