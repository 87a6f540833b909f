import type { Clock } from '../../../core/clock.js';
import type { WorkerJobOutcome } from '../../../harness/worker/worker-link.js';
import type { Logger } from '../../http/logger.js';
import { outlastStorageFaults } from './outlast-storage-faults.js';

/**
 * A job claimed whose debug arming could not be read or recorded (the database went away between
 * the claim's transaction and the arming's, decision 0663). Handed out, it would run without the
 * debugger its agent armed; kept back, it would sit in `flashing` holding its board (a claim of the
 * server's own worker never lapses). So it fails with the reason, tried again while the database is
 * away as a worker's outcome is (`outlastStorageFaults`).
 */
export async function failUnhandedJob(
  deps: { clock: Clock; logger: Logger; finish: (outcome: WorkerJobOutcome) => Promise<unknown> },
  jobId: string,
  cause: unknown,
): Promise<void> {
  deps.logger.error(`reading the debug arming of job ${jobId}`, cause);
  const why = cause instanceof Error ? cause.message : String(cause);
  const outcome: WorkerJobOutcome = {
    state: 'failed',
    failure: { kind: 'internal', message: `the bench could not read whether job ${jobId} is a debug job (${why}), so it was not run; submit it again` },
    uart: null,
  };
  try {
    await outlastStorageFaults(() => deps.finish(outcome), { clock: deps.clock });
  } catch (err) {
    deps.logger.error(`failing job ${jobId}, whose debug arming could not be read`, err);
  }
}
