import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type Clock, sleep } from '../../core/clock.js';
import { DEBUG_LEG_HOLD_MS, workerDebugPath } from '../../wire/worker/debug-schemas.js';
import { dialTcpUpgrade, refusalDetail } from './tcp-upgrade.js';

/** The server refused a debug leg: the job is not (or no longer) this worker's debug job there. */
export class DebugLegRefused extends Error {
  override readonly name = 'DebugLegRefused';
}

/** How much longer than the server's hold a worker waits for the answer to its leg before it takes the path for dead and dials again (host ms). */
export const DEBUG_LEG_ANSWER_SLACK_MS = 15_000;

/** Where a worker dials a debug job's legs: plain data, so an engine's thread can be told it (decision 0910). */
export interface DebugLegAddress {
  serverUrl: string;
  /** The worker token. */
  token: string;
  jobId: string;
}

export interface DebugLegOptions extends DebugLegAddress {
  clock: Clock;
  /** Aborts the dial: it resolves undefined. */
  signal: AbortSignal;
}

/**
 * A remote worker's leg for its debug job's next debugger (decision 0910): an `Upgrade: tcp`
 * request it dials to the server (`GET /api/v1/worker/jobs/{job_id}/debug`), which holds it until a
 * debugger comes. Resolves with the upgraded socket (that debugger's raw stream), or undefined when
 * the server answered 204 (dial again) or `signal` aborted; rejects with `DebugLegRefused` on 404 or
 * 409 (the job is not this worker's debug job there), with another error when the server could not
 * be reached or did not answer within its hold and `DEBUG_LEG_ANSWER_SLACK_MS` (a dead path).
 */
export async function dialDebugLeg(options: DebugLegOptions): Promise<Socket | undefined> {
  const url = new URL(options.serverUrl.replace(/\/+$/, '') + workerDebugPath(options.jobId));
  let answer;
  try {
    answer = await dialTcpUpgrade(url, { token: options.token, clock: options.clock, answerMs: DEBUG_LEG_HOLD_MS + DEBUG_LEG_ANSWER_SLACK_MS, signal: options.signal });
  } catch (err) {
    if (options.signal.aborted) return undefined;
    throw err;
  }
  if (answer.kind === 'upgraded') return answer.socket;
  if (answer.status === 204) return undefined;
  const message = `the bench server refused the debug leg of job ${options.jobId}: ${answer.status} ${refusalDetail(answer.body)}`;
  throw answer.status === 404 || answer.status === 409 ? new DebugLegRefused(message) : new Error(message);
}

/** The most host ms between two dials after the server could not be reached (the wait doubles up to it). */
export const MAX_DEBUG_DIAL_RETRY_MS = 30_000;

export interface DebugLegsOptions {
  /** One leg: the debugger's stream, undefined to dial again (a 204, an abort); rejects with `DebugLegRefused` to stop. */
  dial(signal: AbortSignal): Promise<Duplex | undefined>;
  clock: Clock;
  /** Aborted when the job ends: the loop stops and the open leg closes. */
  signal: AbortSignal;
  /** Host ms before dialling again after the server could not be reached (doubles up to `MAX_DEBUG_DIAL_RETRY_MS`). */
  retryMs: number;
  logError: (message: string, cause?: unknown) => void;
}

/**
 * Brings a debug job's relayed debuggers to `accept`, one at a time (decision 0910): dials a leg,
 * which the server holds until a debugger comes; a leg that becomes a stream is accepted, and the
 * next is dialled once it closes (or at once when the server asked for a new one). Stops when the
 * server says the job is not this worker's debug job there, or `signal` aborts; an unreachable
 * server is dialled again after `retryMs`, doubling. The worker's main thread runs it for its
 * bridge, a sim engine's thread for the port it serves. Never rejects.
 */
export async function serveDebugLegs(accept: (leg: Duplex) => void, options: DebugLegsOptions): Promise<void> {
  const { signal } = options;
  let retryMs = options.retryMs;
  while (!signal.aborted) {
    let leg;
    try {
      leg = await options.dial(signal);
      retryMs = options.retryMs;
    } catch (err) {
      if (signal.aborted || err instanceof DebugLegRefused) break;
      options.logError(`dialling a debug leg failed; trying again in ${retryMs} ms`, err);
      await sleep(options.clock, retryMs, signal).catch(() => undefined);
      retryMs = Math.min(retryMs * 2, MAX_DEBUG_DIAL_RETRY_MS);
      continue;
    }
    if (!leg) continue;
    const closed = new Promise<void>((resolve) => (leg.destroyed && leg.closed ? resolve() : leg.once('close', () => resolve())));
    // The job ended here: the leg closes with its taker, and at the latest here.
    const onAbort = () => leg.destroy();
    signal.addEventListener('abort', onAbort, { once: true });
    accept(leg);
    if (signal.aborted) onAbort();
    await closed;
    signal.removeEventListener('abort', onAbort);
  }
}
