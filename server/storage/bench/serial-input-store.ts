import type { JobState } from '../../../wire/job-states.js';

/**
 * Serial input for running jobs, queued in the store (decision 0420): an agent's bytes reach the
 * worker holding the job whichever replica took them and whichever replica the worker talks to.
 * Inputs of a job are numbered 1, 2, ... in the order the store accepted them; the worker fetches
 * them in that order and acknowledges by number, and acknowledged inputs are deleted.
 */

/** One accepted input, as the worker receives it. */
export interface QueuedSerialInput {
  /** 1-based, gap-free per job, in acceptance order. */
  seq: number;
  bytes: Uint8Array;
  /** When the store accepted it (host ms). */
  queuedAtMs: number;
}

export type EnqueueSerialInputResult =
  /** Accepted for the worker `workerId` that holds the job. */
  | { kind: 'queued'; seq: number; workerId: string }
  /** The job is not flashing or running (or does not exist): nothing was queued. */
  | { kind: 'not-running'; state: JobState | undefined }
  /** The job's unacknowledged input would pass `maxPendingBytes`: nothing was queued. */
  | { kind: 'full'; pendingBytes: number };

/** `held`: the inputs, and why the job was asked to stop (null: it was not), read with them. */
export type TakeSerialInputResult = { kind: 'held'; inputs: QueuedSerialInput[]; cancelReason: string | null } | { kind: 'lost' };

export interface SerialInputStore {
  /**
   * Queues `bytes` for a flashing or running job, checked and numbered in one transaction (a job
   * that ends meanwhile takes nothing). Refused when the job's unacknowledged input would exceed
   * `maxPendingBytes`.
   */
  enqueue(jobId: string, bytes: Uint8Array, options: { nowMs: number; maxPendingBytes: number }): Promise<EnqueueSerialInputResult>;
  /**
   * For the worker holding the job: acknowledges every input up to `writtenThroughSeq` (deleted),
   * then answers those after it in order, as many as fit in `maxBytes` (always at least one), and
   * the job's cancel reason. `lost` when the job is not flashing or running for `workerId`.
   */
  take(jobId: string, request: { workerId: string; writtenThroughSeq: number; maxBytes: number }): Promise<TakeSerialInputResult>;
  /** The highest input number the job's worker acknowledged (0 before any). */
  writtenThrough(jobId: string): Promise<number>;
  /** Deletes the unacknowledged input of jobs that ended (nobody will read it); returns how many. */
  purgeEnded(): Promise<number>;
}

/** Rows in order, cut before the first that would pass `maxBytes` (the first is always kept). */
export function withinBytes(rows: ReadonlyArray<{ seq: number; bytes: Uint8Array; queued_at_ms: number }>, maxBytes: number): QueuedSerialInput[] {
  const inputs: QueuedSerialInput[] = [];
  let total = 0;
  for (const row of rows) {
    if (inputs.length > 0 && total + row.bytes.length > maxBytes) break;
    total += row.bytes.length;
    inputs.push({ seq: row.seq, bytes: new Uint8Array(row.bytes), queuedAtMs: row.queued_at_ms });
  }
  return inputs;
}
