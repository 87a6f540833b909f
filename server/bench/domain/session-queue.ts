import type { Clock, TimerHandle } from '../../../core/clock.js';
import type { Logger } from '../../http/logger.js';
import type { SessionQueueStore, SessionWaiter } from '../../storage/bench/session-queue-store.js';
import { DatabaseUnavailableError, type StorageFault } from '../../storage/storage-faults.js';
import { newId } from './bench-deps.js';
import { boardOfInstance } from './pool-instances.js';

/** A waiter is a ghost unless its replica renews it within this (decision 0555). */
export const WAITER_ALIVE_MS = 10_000;
/** A waiter renews its liveness once less than this is left. */
const RENEW_WHEN_LEFT_MS = WAITER_ALIVE_MS / 2;

interface LocalWaiter {
  seq: number;
  /** Something may have moved the queue: look again at once (kept when it comes between pauses). */
  wake: () => void;
}

/**
 * Agents waiting for a busy pool, first come first served across every replica (issue 11,
 * decision 0555): the waiters are rows of the store's queue, in the order the database took them.
 * Only the head of a queue tries for a lease. The earliest waiter of a queue in this process looks
 * again when something may have moved the queue (a waiter left, a lease was freed: events from the
 * store, LISTEN/NOTIFY on PostgreSQL) and every `retryMs` of the injected clock (the bound when an
 * event is missed); the others only keep themselves alive. A request whose client goes away
 * leaves the queue at once; one whose replica dies stops being counted when its liveness runs out.
 */
export class SessionQueue {
  /** Waiters in this process per queue, in the store's order. */
  private readonly local = new Map<string, LocalWaiter[]>();
  private readonly unsubscribe: () => void;

  constructor(private readonly deps: { clock: Clock; store: SessionQueueStore; logger: Logger; retryMs?: number }) {
    this.unsubscribe = deps.store.onChange((id) => this.nudge(id));
  }

  /** How many wait for `queue` (on every replica), and the first place (1-based) of `agentId` among them, if it waits. */
  lineOf(queue: string, agentId: string): Promise<{ waiting: number; position: number | null }> {
    return this.deps.store.line(queue, agentId, this.deps.clock.nowMs());
  }

  /** Something may have freed `queueOrPool` (every queue when absent): the earliest waiter here of each queue concerned looks again. */
  nudge(queueOrPool?: string): void {
    for (const [queue, waiters] of this.local) {
      if (queueOrPool === undefined || queue === queueOrPool || boardOfInstance(queue) === queueOrPool) waiters[0]?.wake();
    }
  }

  /** Stops listening for the store's events. */
  close(): void {
    this.unsubscribe();
  }

  /**
   * Waits in `queue` (a pool, or one instance of `pool`), calling `attempt` whenever this waiter is
   * at the head of the queue across replicas and woken, until it returns a value (then leaves the
   * queue with it), `waitMs` runs out or `signal` aborts (then leaves with undefined and the
   * position it had).
   */
  async wait<T>(
    target: { queue: string; pool: string },
    agentId: string,
    options: { waitMs: number; signal: AbortSignal; attempt: () => Promise<T | undefined> },
  ): Promise<{ value?: T; position: number }> {
    const { clock, store } = this.deps;
    const startMs = clock.nowMs();
    const row: SessionWaiter = { waiterId: newId('wtr'), queue: target.queue, pool: target.pool, agentId, enqueuedAtMs: startMs, aliveUntilMs: startMs + WAITER_ALIVE_MS };
    // A wake is a flag, not only the current pause's resolver: one that arrives while this waiter
    // renews, reads its position or attempts (no pause pending) would otherwise be lost until the
    // next poll, `retryMs` later. The loop skips its pause when the flag is up.
    let woken = false;
    let endPause: () => void = () => undefined;
    const wake = () => {
      woken = true;
      endPause();
    };
    const me: LocalWaiter = { seq: await store.enqueue(row), wake };
    this.join(target.queue, me);
    const deadlineMs = startMs + options.waitMs;
    let timer: TimerHandle | undefined;
    let position = 1;
    // One abort listener for the whole wait (one per retry piled up: 300 on a 300 s wait).
    const onAbort = () => wake();
    options.signal.addEventListener('abort', onAbort, { once: true });
    // The database going away for a moment (a restart, a failover) is not the waiter's fault: a
    // turn that meets it waits out the store's Retry-After and tries again within the wait. Only
    // a wait that runs out while the store is still away answers with that fault (503).
    let fault: StorageFault | undefined;
    try {
      for (;;) {
        // Cleared before looking: a wake from here on is for what this turn may not have seen.
        woken = false;
        let front = false;
        try {
          const nowMs = clock.nowMs();
          if (row.aliveUntilMs - nowMs < RENEW_WHEN_LEFT_MS) {
            const aliveUntilMs = row.aliveUntilMs;
            row.aliveUntilMs = nowMs + WAITER_ALIVE_MS;
            // A renewal that failed is taken back, so that the next turn renews again.
            const seq = await store.renew(row).catch((err: unknown) => {
              row.aliveUntilMs = aliveUntilMs;
              throw err;
            });
            // Dropped as a ghost meanwhile (this process stalled past its liveness): at the back now.
            if (seq !== me.seq) this.rejoin(target.queue, me, seq);
          }
          front = this.local.get(target.queue)?.[0] === me;
          if (front) {
            position = (await store.position(row.waiterId, nowMs)) ?? position;
            if (position === 1) {
              const value = await options.attempt();
              if (value !== undefined) return { value, position: 1 };
            }
          }
          fault = undefined;
        } catch (err) {
          if (!(err instanceof DatabaseUnavailableError)) throw err;
          fault = err;
        }
        const leftMs = deadlineMs - clock.nowMs();
        if (leftMs <= 0 || options.signal.aborted) {
          if (fault !== undefined) throw fault;
          return { position: front ? position : ((await store.position(row.waiterId, clock.nowMs())) ?? position) };
        }
        // The earliest waiter here looks again every `retryMs`; the others only renew their liveness.
        const pauseMs = fault !== undefined ? fault.retryAfterSeconds * 1_000 : front ? (this.deps.retryMs ?? 1_000) : RENEW_WHEN_LEFT_MS / 2;
        if (woken && fault === undefined) continue;
        await new Promise<void>((resolve) => {
          endPause = resolve;
          timer = clock.setTimeout(resolve, Math.min(leftMs, pauseMs));
        });
        endPause = () => undefined;
        if (timer !== undefined) clock.clearTimeout(timer);
      }
    } finally {
      options.signal.removeEventListener('abort', onAbort);
      if (timer !== undefined) clock.clearTimeout(timer);
      this.leaveLocal(target.queue, me);
      // Leaving tells every replica (the store's event); the next in line here looks at once.
      await store.leave(row.waiterId).catch((err: unknown) => this.deps.logger.warn(`leaving the session queue of ${target.queue} failed (${(err as Error).message}); the waiter stops counting when its liveness runs out`));
      this.local.get(target.queue)?.[0]?.wake();
    }
  }

  private join(queue: string, me: LocalWaiter): void {
    const waiters = this.local.get(queue) ?? [];
    waiters.push(me);
    waiters.sort((a, b) => a.seq - b.seq);
    this.local.set(queue, waiters);
  }

  private rejoin(queue: string, me: LocalWaiter, seq: number): void {
    this.leaveLocal(queue, me);
    me.seq = seq;
    this.join(queue, me);
  }

  private leaveLocal(queue: string, me: LocalWaiter): void {
    const waiters = this.local.get(queue) ?? [];
    const index = waiters.indexOf(me);
    if (index >= 0) waiters.splice(index, 1);
    if (waiters.length === 0) this.local.delete(queue);
  }
}
