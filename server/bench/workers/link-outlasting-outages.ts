import type { Clock } from '../../../core/clock.js';
import type { WorkerLink } from '../../../harness/worker/worker-link.js';
import { outlastStorageFaults } from './outlast-storage-faults.js';

/**
 * The in-process link of the server's own worker, made to keep what a job reports while the
 * database is away or its disk is full (decision 0516): an outcome, a health check's outcome and
 * the start of a job are tried again (`outlastStorageFaults`: up to ten minutes, as a remote
 * worker retries them on a 503 or 507). Other errors pass at once (a job no longer this worker's
 * stays refused).
 */
export function linkOutlastingOutages(link: WorkerLink, deps: { clock: Clock; logError: (message: string, cause: unknown) => void }): WorkerLink {
  const outlast = <T>(what: string, call: () => Promise<T>): Promise<T> =>
    outlastStorageFaults(call, { clock: deps.clock, onRetry: (err, pauseMs) => deps.logError(`${what} could not be stored; trying again in ${pauseMs} ms`, err) });
  return {
    ...link,
    running: (jobId) => outlast(`the start of job ${jobId}`, () => link.running(jobId)),
    finish: (jobId, outcome) => outlast(`the outcome of job ${jobId}`, () => link.finish(jobId, outcome)),
    healthCheckDone: (checkId, outcome) => outlast(`the outcome of health check ${checkId}`, () => link.healthCheckDone(checkId, outcome)),
  };
}
