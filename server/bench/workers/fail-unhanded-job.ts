import { type Clock, sleep } from '../../../core/clock.js';
import type { WorkerJobOutcome } from '../../../harness/worker/worker-link.js';
import type { Logger } from '../../http/logger.js';
import { StorageFault } from '../../storage/storage-faults.js';

/** How long such a job is tried to be failed while the database is away: as long as a worker keeps an outcome (link-outlasting-outages.ts). */
const UNHANDED_RETRY_MS = 600_000;
const FIRST_PAUSE_MS = 500;
const MAX_PAUSE_MS = 5_000;

/**
 * A job claimed whose debug arming could not be read or recorded (the database went away between
 * the claim's transaction and the arming's, decision 0663). Handed out, it would run without the
 * debugger its agent armed; kept back, it would sit in `flashing` holding its board (a claim of the
 * server's own worker never lapses). So it fails with the reason, tried again with pauses doubling
 * on the injected clock while the database is away, as a worker's outcome is.
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
  const giveUpAtMs = deps.clock.nowMs() + UNHANDED_RETRY_MS;
  for (let pauseMs = FIRST_PAUSE_MS; ; pauseMs = Math.min(pauseMs * 2, MAX_PAUSE_MS)) {
    try {
      await deps.finish(outcome);
      return;
    } catch (err) {
      if (!(err instanceof StorageFault) || deps.clock.nowMs() + pauseMs > giveUpAtMs) {
        deps.logger.error(`failing job ${jobId}, whose debug arming could not be read`, err);
        return;
      }
      await sleep(deps.clock, pauseMs);
    }
  }
}
