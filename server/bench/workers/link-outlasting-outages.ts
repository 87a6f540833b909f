import { type Clock, sleep } from '../../../core/clock.js';
import type { WorkerLink } from '../../../harness/worker/worker-link.js';
import { StorageFault } from '../../storage/storage-faults.js';

/** How long the worker in the server's process keeps a result it could not store: as long as a remote worker does (`deliverForMs`). */
const KEEP_RESULTS_FOR_MS = 600_000;
const FIRST_PAUSE_MS = 500;
const MAX_PAUSE_MS = 5_000;

/**
 * The in-process link of the server's own worker, made to keep what a job reports while the
 * database is away or its disk is full (decision 0516): an outcome, a health check's outcome and
 * the start of a job are tried again, with pauses doubling from half a second to 5 s on the
 * injected clock, for up to ten minutes, as a remote worker retries them on a 503 or 507. Other
 * errors pass at once (a job no longer this worker's stays refused).
 */
export function linkOutlastingOutages(link: WorkerLink, deps: { clock: Clock; logError: (message: string, cause: unknown) => void }): WorkerLink {
  const outlast = async <T>(what: string, call: () => Promise<T>): Promise<T> => {
    const giveUpAtMs = deps.clock.nowMs() + KEEP_RESULTS_FOR_MS;
    for (let pauseMs = FIRST_PAUSE_MS; ; pauseMs = Math.min(pauseMs * 2, MAX_PAUSE_MS)) {
      try {
        return await call();
      } catch (err) {
        if (!(err instanceof StorageFault) || deps.clock.nowMs() + pauseMs > giveUpAtMs) throw err;
        deps.logError(`${what} could not be stored; trying again in ${pauseMs} ms`, err);
        await sleep(deps.clock, pauseMs);
      }
    }
  };
  return {
    ...link,
    running: (jobId) => outlast(`the start of job ${jobId}`, () => link.running(jobId)),
    finish: (jobId, outcome) => outlast(`the outcome of job ${jobId}`, () => link.finish(jobId, outcome)),
    healthCheckDone: (checkId, outcome) => outlast(`the outcome of health check ${checkId}`, () => link.healthCheckDone(checkId, outcome)),
  };
}
