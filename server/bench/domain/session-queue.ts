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
  /** What it accepts: the pool, or one instance of it. */
  queue: string;
  /** Something may have moved the queue: look again at once (kept when it comes between pauses). */
  wake: () => void;
}

/**
 * What a waiter for `target` may take, given the queues of the live waiters before it in its
 * pool's line (decision 1030): nothing when one of them accepts everything it accepts (a waiter
 * for the pool, or for the same instance); otherwise what it accepts except the instances those
 * before it wait for. A later waiter never takes an instance an earlier one would accept.
 */
export function openTo(target: { queue: string; pool: string }, ahead: readonly string[]): { except: ReadonlySet<string> } | undefined {
  if (ahead.includes(target.pool) || ahead.includes(target.queue)) return undefined;
  return { except: new Set(ahead) };
}

/**
 * Agents waiting for a busy pool, first come first served across every replica (issue 11,
 * decisions 0555, 1030): the waiters are rows of the store's queue, one line per pool in the
 * order the database took them, each waiting for the pool (any instance) or for one instance.
 * When an instance frees, the earliest waiter that accepts it gets it: a waiter tries only for
 * what no waiter before it accepts. The waiters in this process that may take something (no
 * waiter here before them accepts all they accept) look again when something may have moved the
 * queue (a waiter left, a lease was freed: events from the store, LISTEN/NOTIFY on PostgreSQL) and
 * every `retryMs` of the injected clock (the bound when an event is missed); the others only keep
 * themselves alive. A request whose client goes away leaves the queue at once, and does not try
 * for a lease after that; one whose replica dies stops being counted when its liveness runs out.
 */
export class SessionQueue {
  /** Waiters in this process per pool, in the store's order. */
  private readonly local = new Map<string, LocalWaiter[]>();
  private readonly unsubscribe: () => void;

  constructor(private readonly deps: { clock: Clock; store: SessionQueueStore; logger: Logger; retryMs?: number }) {
    this.unsubscribe = deps.store.onChange((id) => this.nudge(id));
  }

  /**
   * How many wait in `pool`'s line (on every replica, for the pool or one of its instances), and
   * the place (1-based) in it of the first of `agentId`'s waiters (for the instance `queue` only, when given).
   */
  lineOf(pool: string, agentId: string, queue?: string): Promise<{ waiting: number; position: number | null }> {
    return this.deps.store.line(pool, agentId, this.deps.clock.nowMs(), queue);
  }

  /** What a new waiter for `target` may try for before joining the line (decision 1030); undefined when it only joins. */
  async openToNewcomer(target: { queue: string; pool: string }): Promise<{ except: ReadonlySet<string> } | undefined> {
    const waiters = await this.deps.store.waiters(target.pool, this.deps.clock.nowMs());
    return openTo(target, [...new Set(waiters.map((w) => w.queue))]);
  }

  /** Something may have freed `queueOrPool` (every pool when absent): the waiters here of each pool concerned that may take something look again. */
  nudge(queueOrPool?: string): void {
    for (const [pool, waiters] of this.local) {
      if (queueOrPool === undefined || pool === queueOrPool || boardOfInstance(queueOrPool) === pool) for (const w of mayTake(pool, waiters)) w.wake();
    }
  }

  /** Stops listening for the store's events. */
  close(): void {
    this.unsubscribe();
  }

  /**
   * Waits in `pool`'s line for `queue` (the pool, or one instance of it), calling `attempt` with
   * the instances it must leave to earlier waiters whenever it is woken and some of what it accepts
   * is accepted by no waiter before it across replicas, until it returns a value (then leaves the
   * queue with it), `waitMs` runs out or `signal` aborts (then leaves with undefined and the
   * position it had in the pool's line).
   */
  async wait<T>(
    target: { queue: string; pool: string },
    agentId: string,
    options: { waitMs: number; signal: AbortSignal; attempt: (except: ReadonlySet<string>) => Promise<T | undefined> },
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
    const me: LocalWaiter = { seq: await store.enqueue(row), queue: target.queue, wake };
    this.join(target.pool, me);
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
            if (seq !== me.seq) this.rejoin(target.pool, me, seq);
          }
          front = mayTake(target.pool, this.local.get(target.pool) ?? []).includes(me);
          // A request whose client went away tries for nothing more (it would hold a lease nobody uses).
          if (front && !options.signal.aborted) {
            const turn = await store.turn(row.waiterId, nowMs);
            position = turn?.position ?? position;
            const open = turn && openTo(target, turn.ahead);
            if (open) {
              const value = await options.attempt(open.except);
              if (value !== undefined) return { value, position };
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
          return { position: front ? position : ((await store.turn(row.waiterId, clock.nowMs()))?.position ?? position) };
        }
        // The waiters here that may take something look again every `retryMs`; the others only renew their liveness.
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
      this.leaveLocal(target.pool, me);
      // Leaving tells every replica (the store's event); the next in line here looks at once.
      await store.leave(row.waiterId).catch((err: unknown) => this.deps.logger.warn(`leaving the session queue of ${target.queue} failed (${(err as Error).message}); the waiter stops counting when its liveness runs out`));
      for (const w of mayTake(target.pool, this.local.get(target.pool) ?? [])) w.wake();
    }
  }

  private join(pool: string, me: LocalWaiter): void {
    const waiters = this.local.get(pool) ?? [];
    waiters.push(me);
    waiters.sort((a, b) => a.seq - b.seq);
    this.local.set(pool, waiters);
  }

  private rejoin(pool: string, me: LocalWaiter, seq: number): void {
    this.leaveLocal(pool, me);
    me.seq = seq;
    this.join(pool, me);
  }

  private leaveLocal(pool: string, me: LocalWaiter): void {
    const waiters = this.local.get(pool) ?? [];
    const index = waiters.indexOf(me);
    if (index >= 0) waiters.splice(index, 1);
    if (waiters.length === 0) this.local.delete(pool);
  }
}

/**
 * The waiters of `pool` in this process (in order) that may take something as far as this
 * process knows: none before them here accepts all they accept. At most one for the pool and one
 * per instance, so a hundred waiters here cost a few queries per event, not a hundred; the store's
 * line (other replicas' waiters) decides the rest.
 */
function mayTake(pool: string, waiters: readonly LocalWaiter[]): LocalWaiter[] {
  const taken = new Set<string>();
  const out: LocalWaiter[] = [];
  for (const w of waiters) {
    if (taken.has(pool)) break;
    if (!taken.has(w.queue)) out.push(w);
    taken.add(w.queue);
  }
  return out;
}
