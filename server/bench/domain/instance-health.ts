import { afterFailure, afterSuccess } from '../../../backends/probe/quarantine-store.js';
import type { Clock } from '../../../core/clock.js';
import type { BoardHealthRecord } from '../../storage/bench/board-health-store.js';
import type { BenchStore, JobFailureKind, JobRecord } from '../../storage/bench/bench-store.js';

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
 */
export class InstanceHealth {
  constructor(private readonly deps: { clock: Clock; store: BenchStore }) {}

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

  /**
   * A job on an instance of a pool of several ended as its worker reported it: counted against or
   * for the instance; `debug` when it ran under a debugger (its `timeout` is then not counted).
   * Returns the record when this job quarantined it (for the log), else undefined.
   */
  async jobEnded(job: Pick<JobRecord, 'board' | 'instance' | 'state' | 'failure'>, options: { debug?: boolean } = {}): Promise<BoardHealthRecord | undefined> {
    if (!InstanceHealth.ofSeveral(job.board, job.instance)) return undefined;
    const instance = job.instance;
    if (job.state === 'done') {
      // A job that ran resets the count; only a release ends a quarantine (as on the probe).
      await this.deps.store.boardHealth.update(instance, (now) => (now.consecutiveFailures > 0 && !now.quarantine ? afterSuccess() : undefined));
      return undefined;
    }
    const notTheInstance = options.debug ? NOT_THE_INSTANCE_UNDER_A_DEBUGGER : NOT_THE_INSTANCE;
    if (job.state !== 'failed' || !job.failure || notTheInstance.has(job.failure.kind)) return undefined;
    const message = `${job.failure.kind}: ${job.failure.message}`;
    const nowMs = this.deps.clock.nowMs();
    // Counted and decided in one transaction (decision 0551): two replicas lose no count, and a
    // release that lands meanwhile is not undone by a quarantine computed from the count before it.
    const { before, after } = await this.deps.store.boardHealth.update(instance, (now) => afterFailure(now, message, INSTANCE_QUARANTINE_AFTER_FAILURES, nowMs));
    return !before.quarantine && after.quarantine ? after : undefined;
  }

  /** An administrator puts the instance back in service: no quarantine, the count starts again. */
  async release(instance: string): Promise<void> {
    await this.deps.store.boardHealth.put(instance, afterSuccess());
  }
}
