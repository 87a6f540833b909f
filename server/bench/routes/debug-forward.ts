import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Clock } from '../../../core/clock.js';
import { DEBUGGER_KEEPALIVE_IDLE_MS } from '../../../core/gdb/debugger-connection.js';
import { HttpError } from '../../http/http-error.js';

/** Marks an upgrade one replica forwarded to another (decision 0663): the replica it reaches never forwards it again. */
export const FORWARDED_HEADER = 'x-hilbench-debug-forwarded';
/** The most host ms the replica forwarded to may take to answer the upgrade, beyond what it may hold it for (`answerMs`). */
export const FORWARD_ANSWER_MS = 10_000;

/**
 * The request target in origin form: an absolute-form target (`GET http://host/api/...`, which a
 * server must accept, RFC 9112 section 3.2.2) without its scheme and authority, as the router
 * sees it; otherwise as sent. Forwarded in this form, so the upgrade goes to the holding replica
 * and never to a host the client named.
 */
export function originForm(req: IncomingMessage): string {
  const url = req.url ?? '';
  const absolute = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(url);
  return absolute ? url.slice(absolute[0].length) || '/' : url;
}

/**
 * Forwards a debug stream's upgrade request to the replica at `replicaUrl`, which holds the job's
 * streams (decisions 0663, 0910), and splices the two connections byte for byte once it answers:
 * its answer (101, a 204 to a worker's held leg, or a refusal with its `{"detail"}`) goes back as
 * it came, and the bytes flow through untouched, so that replica's checks and bounds are the only
 * ones. Resolves once spliced or answered; rejects (nothing written to `socket`) when the replica
 * cannot be reached or does not answer within `answerMs` (default `FORWARD_ANSWER_MS`: a worker's
 * leg is held there up to its hold, a debugger up to its wait for the leg). `from` (this replica)
 * marks it forwarded.
 */
export function forwardUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  options: { replicaUrl: string; from?: string; clock: Clock; answerMs?: number; /** Holds the end of each splice while it lasts, so a replica closing can end them. */ spliced?: Set<() => void> },
): Promise<void> {
  const target = new URL(originForm(req), options.replicaUrl);
  const headers = { ...req.headers, host: target.host, ...(options.from === undefined ? {} : { [FORWARDED_HEADER]: options.from }) };
  const request = (target.protocol === 'https:' ? https : http).request(target, { method: req.method, headers, agent: false });
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const answerMs = options.answerMs ?? FORWARD_ANSWER_MS;
    const timer = options.clock.setTimeout(() => fail(new Error(`no answer within ${answerMs} ms`)), answerMs);
    const settle = () => {
      settled = true;
      options.clock.clearTimeout(timer);
    };
    const fail = (err: Error) => {
      if (settled) return;
      settle();
      request.destroy();
      reject(new HttpError(503, `the replica at ${options.replicaUrl}, which holds this job's debug streams, could not be reached from this one: ${err.message}`));
    };
    request.on('error', fail);
    // The client gave up before the answer: nothing is left to splice.
    const clientGone = () => fail(new Error('the client closed its connection first'));
    socket.once('close', clientGone);
    request.on('upgrade', (answer: IncomingMessage, upstream: Socket, upstreamHead: Buffer) => {
      settle();
      socket.off('close', clientGone);
      if (socket.destroyed) return void upstream.destroy();
      // GDB's packets are small and each waits for its answer: no Nagle delay on either leg; a
      // peer that vanished without closing (a holding replica's host crashed, a client's network
      // cut) is noticed by keepalive, and the splice ends rather than held for ever.
      upstream.setNoDelay(true);
      upstream.setKeepAlive(true, DEBUGGER_KEEPALIVE_IDLE_MS);
      (socket as Partial<Socket>).setNoDelay?.(true);
      (socket as Partial<Socket>).setKeepAlive?.(true, DEBUGGER_KEEPALIVE_IDLE_MS);
      socket.write(`HTTP/1.1 101 Switching Protocols\r\n${headerLines(answer.rawHeaders)}\r\n`);
      if (upstreamHead.length > 0) socket.write(upstreamHead);
      if (head.length > 0) upstream.write(head);
      const end = () => {
        options.spliced?.delete(end);
        upstream.destroy();
        socket.destroy();
      };
      // A spliced pair is no connection this replica's HTTP server ends: only this set lets close() end it.
      options.spliced?.add(end);
      upstream.on('error', end).on('close', end);
      socket.on('error', end).on('close', end);
      upstream.pipe(socket);
      socket.pipe(upstream);
      resolve();
    });
    request.on('response', (answer: IncomingMessage) => {
      // A refusal (401, 404, 409...): the client hears it as that replica said it (with a content-length: refuse() in debug-upgrades.ts).
      settle();
      socket.off('close', clientGone);
      socket.write(`HTTP/1.1 ${answer.statusCode ?? 502} ${answer.statusMessage ?? ''}\r\n${headerLines(answer.rawHeaders)}\r\n`);
      answer.pipe(socket);
      answer.on('error', () => socket.destroy());
      resolve();
    });
    request.end();
  });
}

/** `name: value` lines, each ending in CRLF, from Node's flat raw header list. */
function headerLines(raw: readonly string[]): string {
  let lines = '';
  for (let i = 0; i + 1 < raw.length; i += 2) lines += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return lines;
}
