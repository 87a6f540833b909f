import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { type Clock, systemClock } from '../../core/clock.js';

/** How long a connection whose answer came before the end of its request's body goes on reading that body (nginx's `lingering_time` is 30 s too). */
export const EARLY_ANSWER_LINGER_MS = 30_000;

/**
 * Keeps reading, and dropping, the rest of a request body after an answer that came before it
 * (a 413 from `Content-Length`, or as soon as an upload crossed its limit; an `Expect` refused
 * before `100 Continue`, whose client may stop waiting and send its body) and closes the
 * connection, instead of node's closing it as soon as the answer is sent.
 * With bytes still arriving, that close is a reset, and a client that reads its answer only once it
 * has sent its whole body (node's `fetch`) reported `EPIPE` instead of the 413 curl showed. The
 * answer's end half-closes the connection (the client sees the answer end), node's parser drains
 * the body as for any request whose body the app did not read, and the connection is destroyed
 * once the body has ended, the client closed, or `lingerMs` on `clock` after the answer. Returns
 * the function that stops watching.
 */
export function lingerAfterEarlyAnswers(server: Server, clock: Clock = systemClock, lingerMs: number = EARLY_ANSWER_LINGER_MS): () => void {
  const onAnswered = (message: unknown) => {
    const { server: of, request, response, socket } = message as { server: Server; request: IncomingMessage; response: ServerResponse; socket: Socket };
    if (of !== server || request.complete || !closesAfterAnswer(response)) return;
    // Node calls destroySoon right after this (the answer said close): made a half-close that lingers.
    socket.destroySoon = () => {
      socket.end();
      const timer = clock.setTimeout(() => socket.destroy(), lingerMs);
      const done = () => {
        clock.clearTimeout(timer);
        socket.destroy();
      };
      socket.once('close', () => clock.clearTimeout(timer));
      if (request.complete) done();
      else request.once('end', done).once('aborted', done);
    };
  };
  subscribe('http.server.response.finish', onAnswered);
  return () => unsubscribe('http.server.response.finish', onAnswered);
}

/**
 * Whether node closes the connection once `response` is sent: what node itself reads to decide
 * (node 20's `resOnFinish` calls `destroySoon` when the response's internal `_last` is set). It is
 * set whatever made the answer the last: a `Connection: close` set with `setHeader` or given to
 * `writeHead` (which `getHeader` does not see), or added by node itself (the client sent
 * `Connection: close`, or HTTP/1.0 without keep-alive). Should a node version drop `_last`, the
 * header set with `setHeader` is the fallback.
 */
export function closesAfterAnswer(response: ServerResponse): boolean {
  const last = (response as ServerResponse & { _last?: unknown })._last;
  if (typeof last === 'boolean') return last;
  return String(response.getHeader('connection') ?? '').toLowerCase() === 'close';
}
