import { IncomingMessage, type RequestListener, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type Clock, systemClock } from '../../core/clock.js';
import { watchBodyReadApart } from './body-stall.js';
import { DEFAULT_REQUEST_TIMEOUT_MS } from './listen.js';

/** Bytes still sent by a client after its answer (the rest of a body the answer did not need) that are read and dropped before its connection is cut. */
export const IGNORED_UPGRADE_DISCARD_BYTES = 1024 * 1024;
/** How long a connection whose answer is sent waits, half-closed, for the client to close its side. */
export const IGNORED_UPGRADE_LINGER_MS = 5_000;

export interface IgnoredUpgradesOptions {
  /** Host time for the deadlines below; default the system clock. */
  clock?: Clock;
  /** The request must have arrived whole this long after it is taken, or its connection is destroyed; default node's `requestTimeout` as `listen` sets it. */
  requestTimeoutMs?: number;
  /** Default `IGNORED_UPGRADE_LINGER_MS`. */
  lingerMs?: number;
}

export interface IgnoredUpgrades {
  /** Serves one request whose Upgrade the service ignores (the `upgrade` listener calls it for every one the service does not take). */
  serve(app: RequestListener, req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /**
   * Destroys every connection still being served, a streamed answer's included. Node no longer
   * counts them as its HTTP connections: `closeAllConnections()` skips them, and `close()` would
   * wait for them for ever. Called before the HTTP server closes.
   */
  destroyAll(): void;
}

/**
 * Serves requests that asked to switch to a protocol the service does not speak (`Upgrade: h2c`,
 * which `curl --http2` sends with every plain-HTTP request) as the ordinary HTTP requests they also
 * are: RFC 9110 section 7.8 lets a server ignore Upgrade. Node hands every request with an Upgrade
 * to the server's `upgrade` listener once there is one, with its HTTP parser gone, so the bench's
 * debug streams answered every such request 404. Here `app` answers it on the same connection,
 * which then closes (`Connection: close`: nothing parses a next request on it); a `Content-Length`
 * body (`head` holds its first bytes) is fed to the request as it arrives. A chunked body cannot be
 * read without the parser: that request is refused with 400, in the services' JSON.
 *
 * Node's own timeouts no longer watch the connection, so the receiving of the request is timed
 * here as node's `requestTimeout` times a normal one, and its body is told to `listen`'s body pace
 * (`watchBodyReadApart`, body-stall.ts); the answer is not (a `?wait=` long poll, a
 * quiet live stream), as on every other connection (listen.ts): a reader that stops taking it is
 * cut by `listen`'s send-stall check, which still watches the connection.
 */
export function ignoredUpgrades(options: IgnoredUpgradesOptions = {}): IgnoredUpgrades {
  const clock = options.clock ?? systemClock;
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const lingerMs = options.lingerMs ?? IGNORED_UPGRADE_LINGER_MS;
  const served = new Set<Socket>();
  const closeAfterAnswer = (connection: Socket) => lingerThenClose(connection, clock, lingerMs);
  return {
    serve(app, req, socket, head) {
      const connection = socket as Socket;
      served.add(connection);
      connection.on('error', () => undefined);
      const deadline = clock.setTimeout(() => connection.destroy(), requestTimeoutMs);
      const received = () => clock.clearTimeout(deadline);
      connection.once('close', () => {
        received();
        served.delete(connection);
      });
      if (req.headers['transfer-encoding'] !== undefined) {
        received();
        const body = JSON.stringify({ detail: 'There was an error parsing the body: a chunked body cannot come with an Upgrade this server ignores; send it with Content-Length, or without Upgrade' });
        connection.write(`HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
        closeAfterAnswer(connection);
        return;
      }
      const { request, stopReading } = withBody(req, connection, head, received);
      const res = new ServerResponse(request);
      // Its body is bound by `listen`'s pace too (a drip held the connection until requestTimeout).
      if (!request.complete) watchBodyReadApart(request, res, connection);
      res.shouldKeepAlive = false;
      res.assignSocket(connection);
      res.once('finish', () => {
        res.detachSocket(connection);
        // Closed once the answer is written, whatever the client does: nobody parses this connection any more.
        stopReading();
        received();
        closeAfterAnswer(connection);
      });
      app(request, res);
    },
    destroyAll() {
      for (const connection of served) connection.destroy();
    },
  };
}

/**
 * Sends the answer and then FIN, and reads and drops what the client still sends (up to
 * IGNORED_UPGRADE_DISCARD_BYTES) until it closes its side, or `lingerMs` after the answer left:
 * a connection closed with unread bytes is reset, and the reset can reach the client before it has
 * read the answer (the chunked 400, a 413 before the body; RFC 9112 section 9.6).
 */
export function lingerThenClose(connection: Socket, clock: Clock, lingerMs: number = IGNORED_UPGRADE_LINGER_MS): void {
  let discardedBytes = 0;
  connection.on('data', (chunk: Buffer) => {
    discardedBytes += chunk.length;
    if (discardedBytes > IGNORED_UPGRADE_DISCARD_BYTES) connection.destroy();
  });
  connection.once('end', () => connection.destroySoon());
  connection.once('finish', () => {
    const linger = clock.setTimeout(() => connection.destroy(), lingerMs);
    connection.once('close', () => clock.clearTimeout(linger));
  });
  connection.resume();
  connection.end();
}

/**
 * The request with its `Content-Length` body (the first bytes in `head`): node ended the upgrade
 * request's stream at its head, so a request with a body is a fresh one with the same head, fed
 * here as the bytes arrive; a connection gone before the last one aborts it. `received` is called
 * once the request is whole; `stopReading` stops feeding it (its answer is sent).
 */
function withBody(upgraded: IncomingMessage, connection: Socket, head: Buffer, received: () => void): { request: IncomingMessage; stopReading: () => void } {
  let remainingBytes = Number(upgraded.headers['content-length'] ?? 0);
  if (remainingBytes === 0) {
    received();
    return { request: upgraded, stopReading: () => undefined };
  }
  const req = new IncomingMessage(connection);
  Object.assign(req, { method: upgraded.method, url: upgraded.url, httpVersion: upgraded.httpVersion, httpVersionMajor: upgraded.httpVersionMajor, httpVersionMinor: upgraded.httpVersionMinor });
  req.rawHeaders = upgraded.rawHeaders;
  req.headers = upgraded.headers;
  const take = (chunk: Buffer) => {
    const part = chunk.subarray(0, remainingBytes);
    remainingBytes -= part.length;
    if (part.length > 0 && !req.push(part)) connection.pause();
    if (remainingBytes === 0) {
      connection.off('data', take);
      req.complete = true;
      received();
      req.push(null);
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
  return { request: req, stopReading: () => connection.off('data', take) };
}

/** The upgrades a service takes: `takes` says which requests are its, `upgrade` serves one, `close` closes them all. */
export interface ServiceUpgrades {
  takes(req: IncomingMessage): boolean;
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  close(): void;
}

/**
 * A service's `upgrade` listener: the upgrades the service `takes` go to it (the bench's debug
 * paths, whatever protocol they ask for, so that it refuses the wrong one in its own words), any
 * other request with an Upgrade is served by `app` as plain HTTP (`ignoredUpgrades`); `close`
 * closes both kinds of connection, before the HTTP server closes (node's own close would wait for them).
 */
export function upgradeListener(service: ServiceUpgrades, app: RequestListener, options: IgnoredUpgradesOptions = {}): Omit<ServiceUpgrades, 'takes'> {
  const ignored = ignoredUpgrades(options);
  return {
    upgrade: (req, socket, head) => (service.takes(req) ? service.upgrade(req, socket, head) : ignored.serve(app, req, socket, head)),
    close: () => {
      service.close();
      ignored.destroyAll();
    },
  };
}
