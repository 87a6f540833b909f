import type { Clock } from '../../../core/clock.js';
import type { BenchStore } from '../../storage/bench/bench-store.js';
import { WORKERS_CHANGED_ID } from '../../storage/bench/session-queue-store.js';
import type { WorkerRecord } from '../../storage/bench/worker-registry.js';

/**
 * The bench workers as last read from the store, reused for `cacheMs` (injected clock) and read
 * again at once after a worker's report, a new worker or a revocation went through this process
 * (`invalidate`): the pools' instances handed out on every submit come from it (decision 0860;
 * every submit read the whole table). A report through another replica shows here within
 * `cacheMs`, as a board's availability does (`LiveBoards`, which reads the store itself when its
 * own cache runs out, so the two waits never add up). A worker added, revoked or reporting other
 * boards through another replica is heard at once where the store says so (`changes`: PostgreSQL
 * NOTIFYs `WORKERS_CHANGED_ID`), and so is a lost LISTEN (anything may have changed meanwhile).
 *
 * A cached row's `lastSeenAtMs` is up to `cacheMs` old: `rosterCacheMs` keeps that plus one
 * heartbeat below the offline window, so a worker that heartbeats never reads as offline.
 */
export class WorkerRoster {
  private cached: { workers: WorkerRecord[]; readAtMs: number } | undefined;
  private reading: { generation: number; promise: Promise<WorkerRecord[]> } | undefined;
  /** Bumped by `invalidate`, so a read that started before it does not fill the cache. */
  private generation = 0;

  private readonly unsubscribe: () => void;

  constructor(
    private readonly deps: {
      clock: Clock;
      store: BenchStore;
      cacheMs: number;
      /** What the store reports changed on any replica (the session queue's `onChange`). */
      changes?: { onChange(listener: (id?: string) => void): () => void };
    },
  ) {
    this.unsubscribe = deps.changes?.onChange((id) => (id === undefined || id === WORKERS_CHANGED_ID) && this.invalidate()) ?? (() => undefined);
  }

  /** Stops hearing the store's changes. */
  close(): void {
    this.unsubscribe();
  }

  /** Every worker, oldest first, as read at most `cacheMs` ago (copies: callers may change them). */
  async list(): Promise<WorkerRecord[]> {
    const nowMs = this.deps.clock.nowMs();
    if (this.cached && nowMs - this.cached.readAtMs < this.deps.cacheMs) return this.cached.workers.map(copy);
    const generation = this.generation;
    if (this.reading?.generation !== generation) {
      const promise = this.deps.store.workers.list().then((workers) => {
        if (this.generation === generation && this.deps.cacheMs > 0) this.cached = { workers, readAtMs: nowMs };
        return workers;
      });
      this.reading = { generation, promise };
      void promise.then(
        () => this.reading?.promise === promise && (this.reading = undefined),
        () => this.reading?.promise === promise && (this.reading = undefined),
      );
    }
    return (await this.reading.promise).map(copy);
  }

  /** A worker's row changed through this process: the next `list` reads the store. */
  invalidate(): void {
    this.generation++;
    this.cached = undefined;
  }
}

/**
 * How long the roster may reuse what it read (host ms): the availability cache's time, and at
 * most half of what the offline window leaves after one heartbeat, so a cached `lastSeenAtMs` plus
 * a heartbeat still falls inside the window (0: no reuse).
 */
export function rosterCacheMs(timings: { availabilityCacheMs: number; heartbeatMs: number; offlineAfterMs: number }): number {
  return Math.max(0, Math.min(timings.availabilityCacheMs, Math.floor((timings.offlineAfterMs - timings.heartbeatMs) / 2)));
}

const copy = (w: WorkerRecord): WorkerRecord => ({ ...w, boards: w.boards.map((b) => ({ ...b })) });
