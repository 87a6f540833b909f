import type { Socket } from 'node:net';
import { refusalDetail, dialTcpUpgrade } from '../../clients/bench/tcp-upgrade.js';
import type { Clock } from '../../core/clock.js';
import { DEBUG_LEG_HOLD_MS, workerDebugPath } from '../../wire/worker/debug-schemas.js';
import { DebugLegRefused } from './worker-link.js';

/** How much longer than the server's hold a worker waits for the answer to its leg before it takes the path for dead and dials again (host ms). */
export const DEBUG_LEG_ANSWER_SLACK_MS = 15_000;

export interface DebugLegOptions {
  serverUrl: string;
  /** The worker token. */
  token: string;
  jobId: string;
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
