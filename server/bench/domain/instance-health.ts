import { afterFailure, afterSuccess } from '../../../backends/probe/quarantine-store.js';
import type { BoardHealthRecord } from '../../storage/bench/board-health-store.js';
import type { BenchStore, FinishedJob, HealthCount, JobFailureKind } from '../../storage/bench/bench-store.js';

/**
 * Consecutive infrastructure failures after which an instance of a pool of several is quarantined:
 * the bench file's default `quarantineAfterFailures` for a physical board (docs/bench-file.md).
 */
export const INSTANCE_QUARANTINE_AFTER_FAILURES = 3;

/**
 * Job failures that say nothing about the instance: the firmware's own fault (`bad-image`), an
 * agent's or a deadline's stop (`cancelled`), and a worker that vanished or a server restart
 * (`interrupted`: the worker's fault, not the board's). The rest are infrastructure failures, as
 * `BackendError.isInfrastructure` counts them for a probe.
 */
const NOT_THE_INSTANCE: ReadonlySet<JobFailureKind> = new Set<JobFailureKind>(['bad-image', 'cancelled', 'interrupted']);

/**
 * What a job's end counts for when the job ran under a debugger (decision 0560): a debug job ends
 * `timeout` when nobody attached for its idle timeout, or when the person at GDB outlasted its
 * deadline; both are the person's pace, not the board's, so only the other infrastructure kinds count.
 */
const NOT_THE_INSTANCE_UNDER_A_DEBUGGER: ReadonlySet<JobFailureKind> = new Set<JobFailureKind>([...NOT_THE_INSTANCE, 'timeout']);

/**
 * Health and quarantine per instance of a pool of several (decision 0551): one failing Pico is
 * quarantined and the pool goes on. The record is the store's `board_health` row keyed by the
 * instance id (`pico.2@w`), so every replica sees it and it survives restarts; a pool of one keeps
 * its board's record exactly as before (its instance id is the board id, kept by the backend that
 * keeps health, the probe). The server counts here what the worker reports of each job: an
 * infrastructure failure counts one more, a job that ran resets the count, and only an
 * administrator's release ends a quarantine. Emulated instances have no backend keeping their
 * health, so this is theirs; a physical instance of a bench-file pool has its entry's count too.
 * The count itself is `countInstanceHealth`, which the store applies as it ends the job (decision 0930).
 */
export class InstanceHealth {
  constructor(private readonly deps: { store: BenchStore }) {}

  /** True when `instance` is one of several of its pool (its id is not the board's). */
  static ofSeveral(board: string, instance: string | undefined): instance is string {
    return instance !== undefined && instance !== board;
  }

  /** The instance's record (healthy when never seen). */
  get(instance: string): Promise<BoardHealthRecord> {
    return this.deps.store.boardHealth.get(instance);
  }

  /** The quarantines among `instances` of `board`'s pool (instances of a pool of one are not read here). */
  async quarantines(board: string, instances: readonly string[]): Promise<Map<string, NonNullable<BoardHealthRecord['quarantine']>>> {
    const found = new Map<string, NonNullable<BoardHealthRecord['quarantine']>>();
    for (const instance of instances) {
      if (!InstanceHealth.ofSeveral(board, instance)) continue;
      const { quarantine } = await this.get(instance);
      if (quarantine) found.set(instance, quarantine);
    }
    return found;
  }

  /** An administrator puts the instance back in service: no quarantine, the count starts again. */
  async release(instance: string): Promise<void> {
    await this.deps.store.boardHealth.put(instance, afterSuccess());
  }
}

/**
 * What a job's end, as its worker reported it, does to its instance of a pool of several: an
 * infrastructure failure counts one more (quarantined at `INSTANCE_QUARANTINE_AFTER_FAILURES`, from
 * the job's end), a job that ran resets the count but not a quarantine (as on the probe), and the
 * rest changes nothing. A debug job's `timeout` is the person's pace, not the instance's. The store
 * applies it in the transaction that ends the job (decision 0930), so the count and the end commit
 * together: an outcome sent again (its answer lost, or its COMMIT's) finds both done, and is not
 * counted twice. Two ends counted at once are one after the other (decision 0551), and a release
 * that lands meanwhile is not undone by a quarantine computed from the count before it.
 */
export const countInstanceHealth: HealthCount = (job) => {
  if (!InstanceHealth.ofSeveral(job.board, job.instance)) return undefined;
  const instance = job.instance;
  if (job.state === 'done') {
    return { instance, countsUnderDebugger: true, change: (now) => (now.consecutiveFailures > 0 && !now.quarantine ? afterSuccess() : undefined) };
  }
  if (job.state !== 'failed' || !job.failure || NOT_THE_INSTANCE.has(job.failure.kind)) return undefined;
  const message = `${job.failure.kind}: ${job.failure.message}`;
  const sinceMs = job.finishedAtMs ?? job.createdAtMs;
  return {
    instance,
    countsUnderDebugger: !NOT_THE_INSTANCE_UNDER_A_DEBUGGER.has(job.failure.kind),
    change: (now) => afterFailure(now, message, INSTANCE_QUARANTINE_AFTER_FAILURES, sinceMs),
  };
};

/** The instance's record when the end `finished` reports quarantined it, for the log; else undefined. */
export function quarantinedBy(finished: Pick<FinishedJob, 'health'>): BoardHealthRecord | undefined {
  const health = finished.health;
  return health && !health.before.quarantine && health.after.quarantine ? health.after : undefined;
}
