import { channel, subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Clock, TimerHandle } from '../../core/clock.js';
import { answerOnSocketAndClose } from './malformed-request.js';

/** How often a request body must have kept its pace (nginx's `client_body_timeout` is 60 s; ours matches the head's 30 s). */
export const DEFAULT_BODY_STALL_TIMEOUT_MS = 30_000;
/** The pace a request body must keep while the server reads it (Kestrel's `MinRequestBodyDataRate` default: 240 bytes/s). */
export const DEFAULT_MIN_BODY_BYTES_PER_SECOND = 240;
/** Checks per `bodyStallTimeoutMs` (at most 5 s apart): a body behind its pace is closable for room from the first, cut at most this much late. */
const CHECKS_PER_WINDOW = 6;

export interface BodyStallOptions {
  /** Host time: the windows and the checks run on it (tests drive them with a fake clock). */
  clock: Clock;
  /** The window: a body that brought less than its pace over one of these is cut. */
  stallTimeoutMs: number;
  /** The pace; 0 leaves only the bound on a gap (not one byte in a window), nginx's rule. */
  minBytesPerSecond: number;
  /**
   * Told when a body being read falls behind its pace (with `cutForRoom`, which answers it as a
   * cut body is answered, its figures so far, and says its connection was needed) and when it
   * catches up or ends (null): the connection cap makes such a connection closable for room, as a
   * stalled head.
   */
  onPace?: (socket: Socket, cutForRoom: (() => void) | null) => void;
}

/**
 * Where `ignoredUpgrades` tells of a request whose body it reads itself (`{request, response,
 * socket}`): node hands a request with an Upgrade over with its parser gone, so its
 * `http.server.request.start` never comes, and the body of an `Upgrade: h2c` request a client
 * drips would be bound by `requestTimeout` alone.
 */
export const IGNORED_UPGRADE_BODY_CHANNEL = 'hilbench.http.ignored-upgrade.body';

/** Tells the pace of the server that accepted `socket` of a request body read apart from node's parser (`IGNORED_UPGRADE_BODY_CHANNEL`). */
export function watchBodyReadApart(request: IncomingMessage, response: ServerResponse, socket: Socket): void {
  const readApart = channel(IGNORED_UPGRADE_BODY_CHANNEL);
  if (readApart.hasSubscribers) readApart.publish({ request, response, socket });
}

/** A request whose body is being received, and the window it is judged over. */
interface Receiving {
  socket: Socket;
  response: ServerResponse;
  windowStartMs: number;
  bytesAtWindowStart: number;
  behind: boolean;
  /**
   * The connection's `bytesWritten` when `response` took it (node gives a connection to the next
   * answer once the one before was written): more since is a `100 Continue` (or `103`) of this
   * request's. Undefined while an answer before it still holds the connection.
   */
  bytesWrittenBeforeAnswer: number | undefined;
}

/**
 * Bounds how slowly a request body may arrive, which node leaves to `requestTimeout` (300 s, kept
 * for uploads): a client sending a whole head and then its body a byte every few seconds held its
 * connection, and a place under the cap, for 5 minutes. Over each window of `stallTimeoutMs` while
 * the server reads it, a body must bring at least `minBytesPerSecond` a second (and at least one
 * byte), or end: otherwise it is answered 408 with `{"detail": ...}` saying which rule it missed
 * and by how much (`cutDetail`), and closed, when nothing was written for it yet; else only
 * closed (`cut`). Both of nginx's `client_body_timeout` (a gap) and Kestrel's
 * `MinRequestBodyDataRate` (a pace, so a drip of a byte every few seconds does not pass): an
 * upload that moves is never cut, however long it takes (up to `requestTimeout`).
 *
 * Only the receiving of a body is timed, and only while the server reads it: a request without a
 * body (a long poll, a stream) is not watched, nor one whose body has ended (its answer may wait),
 * and a window starts again whenever node stopped reading the connection (the app not taking the
 * body as fast as it comes, an upload written to a slow disk), which is no fault of the client's.
 * Upgrades taken (the debug streams) never reach it; a request whose Upgrade is ignored, served
 * as plain HTTP with its body read apart, does (`watchBodyReadApart`). Bytes are counted on the
 * connection (`bytesRead`), as node's parser reads them natively with no event per chunk, and
 * judged every sixth of the window on `clock`: one timer for the server, armed from the start
 * (so it does not come and go with requests). Returns the function that stops watching.
 */
export function cutStalledBodies(server: Server, options: BodyStallOptions): () => void {
  const { clock, stallTimeoutMs, minBytesPerSecond, onPace } = options;
  const rule = { stallTimeoutMs, minBytesPerSecond };
  const checkMs = Math.max(1, Math.min(5_000, Math.floor(stallTimeoutMs / CHECKS_PER_WINDOW)));
  const receiving = new Map<IncomingMessage, Receiving>();
  const forget = (request: IncomingMessage) => {
    const body = receiving.get(request);
    if (!body) return;
    receiving.delete(request);
    if (body.behind) onPace?.(body.socket, null);
  };
  const watch = (request: IncomingMessage, response: ServerResponse, socket: Socket) => {
    if (!hasBody(request)) return;
    const body: Receiving = { socket, response, windowStartMs: clock.nowMs(), bytesAtWindowStart: socket.bytesRead, behind: false, bytesWrittenBeforeAnswer: undefined };
    // Node gives the connection to an answer once the answers before it were written ('socket').
    if (response.socket === socket) body.bytesWrittenBeforeAnswer = socket.bytesWritten;
    else response.once('socket', () => (body.bytesWrittenBeforeAnswer = socket.bytesWritten));
    receiving.set(request, body);
    // 'end' once the app has read it all; 'close' once it is answered or its connection closed.
    request.once('end', () => forget(request)).once('close', () => forget(request));
  };
  const onHead = (message: unknown) => {
    const { server: of, request, response, socket } = message as { server: Server; request: IncomingMessage; response: ServerResponse; socket: Socket };
    if (of === server) watch(request, response, socket);
  };
  // The bodies read apart are told with their connection only: this server's are the ones it accepted.
  const accepted = new WeakSet<Socket>();
  const onConnection = (socket: Socket) => accepted.add(socket);
  const onBodyReadApart = (message: unknown) => {
    const { request, response, socket } = message as { request: IncomingMessage; response: ServerResponse; socket: Socket };
    if (accepted.has(socket)) watch(request, response, socket);
  };
  const newWindow = (body: Receiving, nowMs: number) => {
    body.windowStartMs = nowMs;
    body.bytesAtWindowStart = body.socket.bytesRead;
  };
  const pace = (request: IncomingMessage, body: Receiving, behind: boolean) => {
    if (body.behind === behind) return;
    body.behind = behind;
    const cutForRoom = () => {
      receiving.delete(request);
      cut(body, cutDetail(body, clock.nowMs(), rule) + ', and its connection was needed for another client');
    };
    onPace?.(body.socket, behind ? cutForRoom : null);
  };
  const check = () => {
    // Armed first: nothing a connection does below can stop the checks.
    timer = clock.setTimeout(check, checkMs);
    const nowMs = clock.nowMs();
    for (const [request, body] of receiving) {
      const { socket } = body;
      if (request.complete || socket.destroyed) {
        forget(request);
        continue;
      }
      // Node stopped reading (the app's backpressure, a pipelined request waiting), or the client
      // waits, as it should, for the `100 Continue` the server has not written yet (its
      // credentials are being checked): not the client's pace.
      if (socket.isPaused() || awaitsContinue(request, body)) {
        newWindow(body, nowMs);
        pace(request, body, false);
        continue;
      }
      const elapsedMs = nowMs - body.windowStartMs;
      const dueBytes = Math.max(1, (minBytesPerSecond * elapsedMs) / 1000);
      const behind = socket.bytesRead - body.bytesAtWindowStart < dueBytes;
      if (elapsedMs < stallTimeoutMs) pace(request, body, behind);
      else if (!behind) {
        newWindow(body, nowMs);
        pace(request, body, false);
      } else {
        forget(request);
        cut(body, cutDetail(body, nowMs, rule));
      }
    }
  };
  let timer: TimerHandle = clock.setTimeout(check, checkMs);
  subscribe('http.server.request.start', onHead);
  server.on('connection', onConnection);
  subscribe(IGNORED_UPGRADE_BODY_CHANNEL, onBodyReadApart);
  return () => {
    unsubscribe('http.server.request.start', onHead);
    server.off('connection', onConnection);
    unsubscribe(IGNORED_UPGRADE_BODY_CHANNEL, onBodyReadApart);
    clock.clearTimeout(timer);
    receiving.clear();
  };
}

/**
 * Whether the client was told to wait for `100 Continue` (`Expect: 100-continue`) and nothing was
 * written for its request yet: RFC 9110 section 10.1.1 lets it hold the body back until then, so
 * its body is timed from the `100`, not from its head.
 */
function awaitsContinue(request: IncomingMessage, body: Receiving): boolean {
  const expect = request.headers.expect;
  if (expect === undefined || expect.toLowerCase() !== '100-continue') return false;
  return body.bytesWrittenBeforeAnswer === undefined || body.bytesWrittenBeforeAnswer === body.socket.bytesWritten;
}

/** Whether a request comes with a body: a `Transfer-Encoding` (chunked) or a `Content-Length` above 0. */
function hasBody(request: IncomingMessage): boolean {
  if (request.headers['transfer-encoding'] !== undefined) return true;
  const length = request.headers['content-length'];
  return length !== undefined && length !== '0';
}

/**
 * What the 408 of a body that fell behind says: which rule it missed (no byte at all, or the pace)
 * with the figures, so a client on a slow link, or its operator, knows what to change.
 */
function cutDetail(body: Pick<Receiving, 'socket' | 'windowStartMs' | 'bytesAtWindowStart'>, nowMs: number, rule: { stallTimeoutMs: number; minBytesPerSecond: number }): string {
  const cameBytes = body.socket.bytesRead - body.bytesAtWindowStart;
  const over = `in the last ${seconds(nowMs - body.windowStartMs)}`;
  const pace = `${rule.minBytesPerSecond} bytes a second or more`;
  if (cameBytes <= 0) {
    const asked = rule.minBytesPerSecond > 0 ? `it must come at ${pace}` : `it must bring a byte at least every ${seconds(rule.stallTimeoutMs)}`;
    return `Request Timeout: no byte of the request body came ${over} (${asked})`;
  }
  return `Request Timeout: the request body must come at ${pace}; ${cameBytes} byte${cameBytes === 1 ? '' : 's'} came ${over}`;
}

/** `ms` in seconds for a reader: `30 s`, `4.5 s`. */
function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))} s`;
}

/**
 * Answers a body that fell behind: 408 saying `detail` if nothing was written for its request yet
 * (no answer, no `100 Continue`, and no answer before it still being written on the connection,
 * which the 408 would cut into), else only closed, as node's `requestTimeout` does.
 *
 * Node's parser still holds the connection and the app its request: the connection stops being
 * read first, so no more of the body reaches the app, which must not act on a request it was
 * answered 408 to; what the app answers afterwards is dropped with the connection.
 */
function cut({ socket, response, bytesWrittenBeforeAnswer }: Receiving, detail: string): void {
  socket.pause();
  const answerBegun = response.headersSent || response.socket !== socket || bytesWrittenBeforeAnswer !== socket.bytesWritten;
  if (answerBegun || !socket.writable) socket.destroy();
  else answerOnSocketAndClose(socket, 408, detail);
}
