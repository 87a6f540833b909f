import type { Clock, TimerHandle } from '../../core/clock.js';
import type { WorkerLink } from './worker-link.js';

/**
 * Renews the claim on job `jobId` every `everyMs` (host ms, on `clock`) while it runs here: a stop
 * the server answers (cancelled, session ended, claim lost) goes to `onStop`; a failed renewal is
 * logged and tried again at the next turn. Returns the function that ends the renewals.
 */
export function renewClaim(
  link: Pick<WorkerLink, 'heartbeat'>,
  jobId: string,
  options: { clock: Clock; everyMs: number; onStop: (reason: string) => void; logError: (message: string, cause: unknown) => void; what?: string },
): () => void {
  const { clock } = options;
  let timer: TimerHandle | undefined;
  const next = () => {
    timer = clock.setTimeout(() => {
      link.heartbeat(jobId).then(
        (control) => {
          if (control.stop !== null) options.onStop(control.stop);
          if (timer !== undefined) next();
        },
        (err: unknown) => {
          options.logError(`renewing the claim on ${options.what ?? 'job'} ${jobId} failed`, err);
          if (timer !== undefined) next();
        },
      );
    }, options.everyMs);
  };
  next();
  return () => {
    if (timer !== undefined) clock.clearTimeout(timer);
    timer = undefined;
  };
}
