import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AddressInfo, Socket } from 'node:net';
import { type Clock, systemClock } from '../../core/clock.js';
import { cutStalledBodies, DEFAULT_BODY_STALL_TIMEOUT_MS, DEFAULT_MIN_BODY_BYTES_PER_SECOND } from './body-stall.js';
import { capConnections, type ConnectionCounts, upgradedConnection } from './connection-cap.js';
import { lingerAfterEarlyAnswers } from './linger-after-early-answer.js';
import { answerConnect, answerMalformedRequest, answerUnmetExpectation } from './malformed-request.js';

/**
 * The one listen/close of both services. App factories never listen (tests start them on port 0
 * in process); the `start*Server` entry points listen through this.
 */
export interface ListeningServer {
  /** The node server, with no `request` listener yet: the caller attaches its app. */
  server: Server;
  /** The bound port (the one picked when 0 was asked for). */
  port: number;
  /** e.g. `http://127.0.0.1:41234`, IPv6 hosts in brackets. */
  origin: string;
  /** The connection cap's live counts: open now, closed for room, refused (the services' metrics). */
  connections: ConnectionCounts;
  /** Stops accepting, drops open (keep-alive) connections, and resolves once the server has closed. */
  close(): Promise<void>;
}

export interface ListenOptions {
  /** 0 picks a free port (tests). */
  port: number;
  /** Default 127.0.0.1: exposing a service is a decision, not a default. */
  host?: string;
  /**
   * Connections open at once, so a client opening sockets without end cannot exhaust the process'
   * file descriptors. One more makes room by closing the connection that has waited longest for a
   * request head, or whose body fell behind its pace (connection-cap.ts: a slow head or body,
   * slowloris, no longer holds the door shut), or is
   * closed as soon as it is accepted when every connection is being answered: long polls and live
   * streams each hold one. Default `DEFAULT_MAX_CONNECTIONS`.
   */
  maxConnections?: number;
  /**
   * A request's head must have arrived this long after it began, or it is answered 408 and closed
   * (node's `headersTimeout`; its default let a stalled head hold a connection for a minute, and a
   * whole request for `requestTimeout`, 300 s, which stays: uploads). Only the receiving of a request
   * is timed: long polls and live streams, whose answer waits, are not. Default `DEFAULT_HEADERS_TIMEOUT_MS`.
   */
  headersTimeoutMs?: number;
  /**
   * A request body, while the server reads it, must bring `minBodyBytesPerSecond` (and at least a
   * byte) over every window of this, or end; else it is answered 408 and closed (body-stall.ts),
   * and from the first check that finds it behind, its connection is closable for room as a
   * stalled head is. Node bounds a body only by `requestTimeout` (300 s): a body dripped a byte at
   * a time held its place that long. Default `DEFAULT_BODY_STALL_TIMEOUT_MS`.
   */
  bodyStallTimeoutMs?: number;
  /** The pace of `bodyStallTimeoutMs`, in bytes a second; 0 leaves only a gap of a whole window without a byte cut. Default `DEFAULT_MIN_BODY_BYTES_PER_SECOND`. */
  minBodyBytesPerSecond?: number;
  /**
   * A connection with answer bytes waiting to be sent all this time, of which the client took less
   * than 64 KiB, is destroyed. Node has no timeout on sending: a client that asks for a large answer (a relay
   * file, a long page) and never reads held its connection, and a place under `maxConnections`,
   * for ever, so as many such clients as the cap shut everyone out. A connection with nothing to
   * send (a long poll waiting) is never cut by this. Default `DEFAULT_SEND_STALL_TIMEOUT_MS`.
   */
  sendStallTimeoutMs?: number;
  /** Host time for the linger after an early answer (`lingerAfterEarlyAnswers`) and the body pace (`cutStalledBodies`); default the system clock. */
  clock?: Clock;
}

export const DEFAULT_MAX_CONNECTIONS = 1024;
export const DEFAULT_HEADERS_TIMEOUT_MS = 30_000;
export const DEFAULT_SEND_STALL_TIMEOUT_MS = 60_000;
export { DEFAULT_BODY_STALL_TIMEOUT_MS, DEFAULT_MIN_BODY_BYTES_PER_SECOND };
/** A request must have arrived whole this long after it began (node's `requestTimeout` default, kept for uploads that move: one that does not is cut sooner, `bodyStallTimeoutMs`); requests whose Upgrade is ignored are timed the same (ignored-upgrade.ts). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 300_000;

/** The listen options a service's start options carry (absent ones left to `listen`'s defaults). */
export function listenOptionsOf(options: Omit<ListenOptions, 'port'>): Omit<ListenOptions, 'port'> {
  return {
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(options.maxConnections !== undefined ? { maxConnections: options.maxConnections } : {}),
    ...(options.headersTimeoutMs !== undefined ? { headersTimeoutMs: options.headersTimeoutMs } : {}),
    ...(options.sendStallTimeoutMs !== undefined ? { sendStallTimeoutMs: options.sendStallTimeoutMs } : {}),
    ...(options.bodyStallTimeoutMs !== undefined ? { bodyStallTimeoutMs: options.bodyStallTimeoutMs } : {}),
    ...(options.minBodyBytesPerSecond !== undefined ? { minBodyBytesPerSecond: options.minBodyBytesPerSecond } : {}),
    ...(options.clock !== undefined ? { clock: options.clock } : {}),
  };
}

/** Listens on `host:port` and resolves once bound; rejects (nothing left open) if binding fails. */
export async function listen(options: ListenOptions): Promise<ListeningServer> {
  const host = options.host ?? '127.0.0.1';
  const headersTimeoutMs = options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
  if (!Number.isSafeInteger(headersTimeoutMs) || headersTimeoutMs < 1) throw new RangeError(`headersTimeoutMs must be a whole number of ms above 0; got ${headersTimeoutMs}`);
  const maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  if (!Number.isSafeInteger(maxConnections) || maxConnections < 1) throw new RangeError(`maxConnections must be a whole number above 0; got ${maxConnections}`);
  const sendStallTimeoutMs = options.sendStallTimeoutMs ?? DEFAULT_SEND_STALL_TIMEOUT_MS;
  if (!Number.isSafeInteger(sendStallTimeoutMs) || sendStallTimeoutMs < 1) throw new RangeError(`sendStallTimeoutMs must be a whole number of ms above 0; got ${sendStallTimeoutMs}`);
  const bodyStallTimeoutMs = options.bodyStallTimeoutMs ?? DEFAULT_BODY_STALL_TIMEOUT_MS;
  if (!Number.isSafeInteger(bodyStallTimeoutMs) || bodyStallTimeoutMs < 1) throw new RangeError(`bodyStallTimeoutMs must be a whole number of ms above 0; got ${bodyStallTimeoutMs}`);
  const minBodyBytesPerSecond = options.minBodyBytesPerSecond ?? DEFAULT_MIN_BODY_BYTES_PER_SECOND;
  if (!Number.isSafeInteger(minBodyBytesPerSecond) || minBodyBytesPerSecond < 0) throw new RangeError(`minBodyBytesPerSecond must be a whole number of bytes, 0 or more; got ${minBodyBytesPerSecond}`);
  const clock = options.clock ?? systemClock;
  const server = createServer({
    // A request without Host is refused by the apps (`requireHost`), in JSON: node's own answer has no body.
    requireHostHeader: false,
    headersTimeout: headersTimeoutMs,
    requestTimeout: DEFAULT_REQUEST_TIMEOUT_MS,
    // Node checks the timeouts this often (default 30 s, which would double a 30 s bound).
    connectionsCheckingInterval: checkEveryMs(headersTimeoutMs),
  });
  // Not node's `maxConnections`, which refuses the newcomer even when the cap is held by stalled heads.
  const { stop: stopCapping, counts: connections, bodyBehind } = capConnections(server, maxConnections);
  const stopLingering = lingerAfterEarlyAnswers(server, clock);
  // Node bounds a body only by requestTimeout: one dripped a byte at a time held its place 300 s.
  const stopCuttingStalledBodies = cutStalledBodies(server, { clock, stallTimeoutMs: bodyStallTimeoutMs, minBytesPerSecond: minBodyBytesPerSecond, onPace: bodyBehind });
  // A request node cannot parse, or whose Expect it does not meet, is answered in the services'
  // JSON, not node's bare 400 or empty 417; a CONNECT, which node closed unanswered, 405.
  server.on('clientError', answerMalformedRequest);
  server.on('checkExpectation', answerUnmetExpectation);
  server.on('connect', answerConnect);
  const stopCuttingStalledSends = cutStalledSends(server, sendStallTimeoutMs);
  // The subscriptions (diagnostics_channel, process-wide) and the interval end with the server's
  // 'close', which a server that never bound never emits: a failed bind releases them itself.
  const release = () => {
    stopCapping();
    stopLingering();
    stopCuttingStalledSends();
    stopCuttingStalledBodies();
  };
  server.once('close', release);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    server.off('close', release);
    release();
    throw err;
  }
  const { port } = server.address() as AddressInfo;
  return {
    server,
    port,
    origin: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The listeners of a built service, attached to its server once it is ready. */
export interface ServiceListeners {
  app: RequestListener;
  /** Refuses a request sent with `Expect: 100-continue` from its headers, or writes 100 and passes it to `app`. */
  checkContinue: RequestListener;
  upgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
}

/** Seconds a client is told to wait (`Retry-After`) before asking a service that is starting again. */
export const STARTING_RETRY_AFTER_SECONDS = 1;

/**
 * Answers every request to `server` 503 `{"detail": detail}` with `Retry-After` until `serve`
 * attaches the service's listeners: the services listen before they are built (their published
 * addresses need the bound port) and a build opens the database and runs its migrations, while
 * node leaves a request with no `request` listener unanswered for ever. The swap is synchronous,
 * so every request gets one or the other. Without an `upgrade` listener node serves an upgrade
 * request as a normal one, so that too is answered 503.
 */
export function answerWhileStarting(server: Server, detail: string): { serve(listeners: ServiceListeners): void } {
  const body = JSON.stringify({ detail });
  const starting: RequestListener = (_req, res) => {
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': String(STARTING_RETRY_AFTER_SECONDS), 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  server.on('request', starting);
  return {
    serve(listeners) {
      server.off('request', starting);
      // Without a listener node writes `100 Continue` to every `Expect: 100-continue` at once.
      server.on('checkContinue', listeners.checkContinue);
      server.on('request', listeners.app);
      const upgrade = listeners.upgrade;
      if (upgrade)
        server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
          upgradedConnection(server, socket);
          upgrade(req, socket, head);
        });
    },
  };
}

/** How often a timeout of `timeoutMs` is checked: at half of it, at most every 5 s, so it is late by that at most. */
function checkEveryMs(timeoutMs: number): number {
  return Math.max(1, Math.min(5_000, Math.floor(timeoutMs / 2)));
}

/** Bytes a stalled-looking connection must take per `sendStallTimeoutMs` to keep it (about 1 KiB/s at the default). */
const SEND_STALL_MIN_BYTES = 64 * 1024;

/**
 * Destroys the server's connections that kept answer bytes queued (`writableLength`) for
 * `stallMs` on end while the client took fewer than SEND_STALL_MIN_BYTES of them: a reader that
 * stopped (or trickles, the kernel letting a byte through now and then, or a client reading one a
 * minute) does not keep its place. Checked every `stallMs / 2` (at most 5 s, like the head
 * timeout's check); returns the function that stops checking.
 */
function cutStalledSends(server: Server, stallMs: number): () => void {
  const open = new Map<Socket, { sinceMs: number; sentBytes: number } | undefined>();
  server.on('connection', (socket: Socket) => {
    open.set(socket, undefined);
    socket.once('close', () => open.delete(socket));
  });
  const check = () => {
    const nowMs = performance.now();
    for (const [socket, window] of open) {
      const queuedBytes = socket.writableLength;
      // What left node for the kernel: written minus what is still queued.
      const sentBytes = socket.bytesWritten - queuedBytes;
      if (queuedBytes === 0) open.set(socket, undefined);
      else if (!window) open.set(socket, { sinceMs: nowMs, sentBytes });
      else if (nowMs - window.sinceMs < stallMs) continue;
      else if (sentBytes - window.sentBytes < SEND_STALL_MIN_BYTES) socket.destroy();
      else open.set(socket, { sinceMs: nowMs, sentBytes });
    }
  };
  const timer = setInterval(check, checkEveryMs(stallMs));
  timer.unref();
  return () => clearInterval(timer);
}
