import { IncomingMessage, type RequestListener, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/** How long a request served by `serveIgnoringUpgrade` may go without a byte either way (the server's own timeouts no longer watch its connection). */
export const IGNORED_UPGRADE_IDLE_MS = 30_000;

/** True when the request asks for a WebSocket (`Upgrade: websocket`, in any case): the upgrades a service takes. */
export function isWebSocketUpgrade(req: IncomingMessage): boolean {
  return (req.headers.upgrade ?? '').split(',').some((protocol) => protocol.trim().toLowerCase() === 'websocket');
}

/**
 * Serves a request that asked to switch to a protocol the service does not speak (`Upgrade: h2c`,
 * which `curl --http2` sends with every plain-HTTP request) as the ordinary HTTP request it also is:
 * RFC 9110 section 7.8 lets a server ignore Upgrade. Node hands every request with an Upgrade to the
 * server's `upgrade` listener once there is one, with its HTTP parser gone, so the bench's debug
 * WebSockets answered every such request 404. Here `app` answers it on the same connection, which
 * then closes (`Connection: close`: nothing parses a next request on it); a `Content-Length` body
 * (`head` holds its first bytes) is fed to the request as it arrives. A chunked body cannot be
 * read without the parser: that request is refused with 400, in the services' JSON.
 */
export function serveIgnoringUpgrade(app: RequestListener, req: IncomingMessage, socket: Duplex, head: Buffer, options: { idleMs?: number } = {}): void {
  const connection = socket as Socket;
  connection.on('error', () => undefined);
  connection.setTimeout(options.idleMs ?? IGNORED_UPGRADE_IDLE_MS, () => connection.destroy());
  if (req.headers['transfer-encoding'] !== undefined) {
    const body = JSON.stringify({ detail: 'There was an error parsing the body: a chunked body cannot come with an Upgrade this server ignores; send it with Content-Length, or without Upgrade' });
    connection.write(`HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    connection.destroySoon();
    return;
  }
  const request = withBody(req, connection, head);
  const res = new ServerResponse(request);
  res.shouldKeepAlive = false;
  res.assignSocket(connection);
  res.once('finish', () => {
    res.detachSocket(connection);
    // Closed once the answer is written, whatever the client does: nobody reads this connection any more.
    connection.destroySoon();
  });
  app(request, res);
}

/**
 * The request with its `Content-Length` body (the first bytes in `head`): node ended the upgrade
 * request's stream at its head, so a request with a body is a fresh one with the same head, fed
 * here as the bytes arrive; a connection gone before the last one aborts it.
 */
function withBody(upgraded: IncomingMessage, connection: Socket, head: Buffer): IncomingMessage {
  let remainingBytes = Number(upgraded.headers['content-length'] ?? 0);
  if (remainingBytes === 0) return upgraded;
  const req = new IncomingMessage(connection);
  Object.assign(req, { method: upgraded.method, url: upgraded.url, httpVersion: upgraded.httpVersion, httpVersionMajor: upgraded.httpVersionMajor, httpVersionMinor: upgraded.httpVersionMinor });
  req.rawHeaders = upgraded.rawHeaders;
  req.headers = upgraded.headers;
  const end = () => {
    req.complete = true;
    req.push(null);
  };
  const take = (chunk: Buffer) => {
    const part = chunk.subarray(0, remainingBytes);
    remainingBytes -= part.length;
    if (part.length > 0 && !req.push(part)) connection.pause();
    if (remainingBytes === 0) {
      connection.off('data', take);
      end();
    }
  };
  // The parser that would have told the request its connection closed is gone: tell it here.
  connection.once('close', () => {
    if (req.complete) return;
    req.emit('aborted');
    req.destroy();
  });
  take(head);
  if (remainingBytes > 0) {
    connection.on('data', take);
    connection.resume();
  }
  return req;
}
