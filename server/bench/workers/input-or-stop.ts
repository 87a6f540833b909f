import type { SerialInputBatch } from '../../../harness/worker/worker-link.js';
import type { BenchStore } from '../../storage/bench/bench-store.js';

/**
 * One look of a worker's waiting serial-input fetch: the inputs after what it wrote, `lost` when
 * the job is no longer its own, or, with neither, the reason the job was asked to stop (its agent
 * cancelled it, its session ended): the fetch is the one request a remote worker holds open while
 * its job runs, so answering it is how a cancel reaches it at once (decision 0535). Undefined:
 * nothing yet, keep waiting.
 */
export async function takeInputOrStop(
  store: BenchStore,
  jobId: string,
  request: { workerId: string; writtenThroughSeq: number; maxBytes: number },
): Promise<SerialInputBatch | undefined> {
  const taken = await store.serialInput.take(jobId, request);
  if (taken.kind === 'lost') return { inputs: [], lost: true };
  if (taken.inputs.length > 0) return { inputs: taken.inputs.map((i) => ({ seq: i.seq, bytes: i.bytes })), lost: false };
  // The cancel reason comes with the take (a read of the job fewer on every look, decision 0720).
  return taken.cancelReason === null ? undefined : { inputs: [], lost: false, stop: taken.cancelReason };
}

/** Why a worker must stop a job that is no longer its own (ended, or claimed by another worker). */
export function lostJobReason(jobId: string, state: string): string {
  return `job ${jobId} is ${state} and no longer this worker's`;
}
