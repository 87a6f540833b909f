import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { Clock } from '../../core/clock.js';
import { DEBUGGER_KEEPALIVE_IDLE_MS } from '../../core/gdb/debugger-connection.js';
import { DEBUG_UPGRADE_PROTOCOL } from '../../wire/worker/debug-schemas.js';

/** The most bytes of a refusal's body kept for its message. */
const MAX_REFUSAL_BODY_BYTES = 16_384;

/** How an `Upgrade: tcp` request was answered: the raw stream (101), or the server's answer (a refusal, a 204). */
export type TcpUpgradeAnswer = { kind: 'upgraded'; socket: Socket } | { kind: 'answered'; status: number; body: string };

export interface TcpUpgradeOptions {
  /** The bearer token the path takes (the agent's, or the worker's). */
  token: string;
  clock: Clock;
  /** The most host ms to wait for the answer; then the request is dropped and the promise rejects. */
  answerMs: number;
  /** Aborts the request: the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Asks `url` for a debug stream as raw bytes on an HTTP upgrade (`Upgrade: tcp`; decision 0910),
 * the way `hilbench debug --server` and a worker dial their legs. The upgraded socket has no Nagle
 * delay (GDB's packets are small and each waits for its answer) and TCP keepalive (a server that
 * vanished without closing is noticed), and carries any bytes that came with the 101. Rejects when
 * the server cannot be reached, does not answer within `answerMs`, or `signal` aborts.
 */
export function dialTcpUpgrade(url: URL, options: TcpUpgradeOptions): Promise<TcpUpgradeAnswer> {
  const { clock, signal } = options;
  const request = (url.protocol === 'https:' ? https : http).request(url, {
    method: 'GET',
    agent: false,
    headers: { authorization: `Bearer ${options.token}`, connection: 'Upgrade', upgrade: DEBUG_UPGRADE_PROTOCOL },
  });
  return new Promise<TcpUpgradeAnswer>((resolve, reject) => {
    let settled = false;
    const settle = () => {
      settled = true;
      clock.clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const fail = (err: unknown) => {
      if (settled) return;
      settle();
      request.destroy();
      reject(err);
    };
    const timer = clock.setTimeout(() => fail(new Error(`${url.origin} did not answer the debug stream's upgrade within ${options.answerMs} ms`)), options.answerMs);
    const onAbort = () => fail(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    request.on('error', fail);
    request.on('upgrade', (_answer, socket: Socket, head: Buffer) => {
      if (settled) return void socket.destroy();
      settle();
      socket.setNoDelay(true);
      socket.setKeepAlive(true, DEBUGGER_KEEPALIVE_IDLE_MS);
      if (head.length > 0) socket.unshift(head);
      resolve({ kind: 'upgraded', socket });
    });
    request.on('response', (answer) => {
      let body = '';
      answer.setEncoding('utf8');
      answer.on('data', (chunk: string) => {
        if (body.length < MAX_REFUSAL_BODY_BYTES) body += chunk.slice(0, MAX_REFUSAL_BODY_BYTES - body.length);
      });
      answer.on('error', fail);
      answer.on('end', () => {
        if (settled) return;
        settle();
        resolve({ kind: 'answered', status: answer.statusCode ?? 0, body });
      });
    });
    request.end();
  });
}

/** A refusal's `detail` (FastAPI's shape), or the body's text. */
export function refusalDetail(body: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  if (typeof parsed !== 'object' || parsed === null || !('detail' in parsed)) return body;
  const { detail } = parsed as { detail: unknown };
  return typeof detail === 'string' ? detail : JSON.stringify(detail);
}
