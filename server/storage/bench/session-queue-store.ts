/**
 * The session queue in the store (decisions 0555, 1030): requests waiting for a board (`POST
 * /api/v1/sessions` with `wait_seconds`), recorded where every replica sees them, so the order is
 * first come first served per pool across every instance, worker and replica. A pool has one line:
 * a waiter for the pool and a waiter for one of its instances stand in the same order.
 *
 * A waiter is a row: what it accepts (a pool's board id, or one instance asked for by id), its pool,
 * its agent, when it joined, and a liveness deadline. The replica holding the waiting request
 * renews the deadline while it waits and removes the row when the request ends (granted, timed
 * out, or its client went away). A replica that dies leaves a row whose deadline passes: from then
 * on it is a ghost, counted by nobody and removed by the next writer, so it never blocks the
 * queue for longer than one liveness period. The order is the database's insertion order (a
 * sequence), not the replicas' clocks.
 *
 * Reads never write. Times are host milliseconds from the caller's injected clock.
 */
export interface SessionQueueStore {
  /**
   * Puts `waiter` at the back of its queue (removing ghosts first); returns its place in the
   * queue's order (`seq`: smaller is earlier, across replicas).
   */
  enqueue(waiter: SessionWaiter): Promise<number>;
  /**
   * Keeps `waiterId` alive until `aliveUntilMs`. A waiter dropped as a ghost meanwhile (its replica
   * stalled past its deadline) joins again at the back: returns its new `seq`, or its old one.
   */
  renew(waiter: SessionWaiter): Promise<number>;
  /** Leaves the queue (granted, timed out, or its client went away). Idempotent. */
  leave(waiterId: string): Promise<void>;
  /**
   * Where `waiterId` stands in its pool's line at `nowMs` (decision 1030): its 1-based place among
   * the pool's live waiters, and what the live waiters before it accept (their queues: the pool,
   * or instances); null when it does not wait.
   */
  turn(waiterId: string, nowMs: number): Promise<WaiterTurn | null>;
  /**
   * How many live waiters `pool` has at `nowMs` (for the pool and for each of its instances), and
   * the place (1-based) in that line of the first of `agentId`'s waiters, of those for `queue` only when given.
   */
  line(pool: string, agentId: string, nowMs: number, queue?: string): Promise<{ waiting: number; position: number | null }>;
  /** The live waiters of `pool` at `nowMs` (for the pool and for each of its instances), first first. */
  waiters(pool: string, nowMs: number): Promise<SessionWaiter[]>;
  /**
   * Calls `listener` with a queue or pool id whenever something that may move a queue happened
   * on this database: a waiter left, or a lease was freed. From every replica on PostgreSQL
   * (LISTEN/NOTIFY), from this store's connection on SQLite. Without an id, any queue may have
   * moved: events may have been lost (PostgreSQL's LISTEN connection was lost and is back). A
   * hint: waiters still poll, bounded.
   */
  onChange(listener: (queueOrPool?: string) => void): () => void;
  /**
   * Settles once changes are reported to the listeners subscribed so far (on PostgreSQL: the
   * LISTEN connection is open), or once trying failed (the poll carries on without events).
   */
  listening(): Promise<void>;
  /** Stops listening (the PostgreSQL connection that LISTENs). */
  close(): Promise<void>;
}

/** A waiter's place in its pool's line (decision 1030). */
export interface WaiterTurn {
  /** 1-based, among the pool's live waiters. */
  position: number;
  /** The queues (the pool, or instances) of the live waiters before it, each once. */
  ahead: string[];
}

export interface SessionWaiter {
  waiterId: string;
  /** The queue: the pool's board id, or the one instance asked for by id. */
  queue: string;
  /** The pool (board id) the queue belongs to. */
  pool: string;
  agentId: string;
  enqueuedAtMs: number;
  /** The waiter is a ghost from this time on unless renewed. */
  aliveUntilMs: number;
}

/** The queue's table, the same for both dialects but for the sequence's type (SQLite `INTEGER PRIMARY KEY`, PostgreSQL `BIGSERIAL`). */
export function sessionWaitersTable(seqColumn: string): string {
  return `
  CREATE TABLE session_waiters (
    ${seqColumn},
    waiter_id TEXT NOT NULL UNIQUE,
    queue TEXT NOT NULL,
    pool TEXT NOT NULL,
    agent_id TEXT NOT NULL REFERENCES agents(agent_id),
    enqueued_at_ms BIGINT NOT NULL,
    alive_until_ms BIGINT NOT NULL
  );
  CREATE INDEX session_waiters_by_queue ON session_waiters(queue, seq);
`;
}

/** The turn of `waiterId` among `waiters` (one pool's live waiters, first first); null when it is not among them. */
export function turnOf(waiters: readonly { waiter_id: string; queue: string }[], waiterId: string): WaiterTurn | null {
  const index = waiters.findIndex((w) => w.waiter_id === waiterId);
  if (index < 0) return null;
  return { position: index + 1, ahead: [...new Set(waiters.slice(0, index).map((w) => w.queue))] };
}

/** A row of `session_waiters`. */
export interface SessionWaiterRow {
  seq: number;
  waiter_id: string;
  queue: string;
  pool: string;
  agent_id: string;
  enqueued_at_ms: number;
  alive_until_ms: number;
}

export function waiterFromRow(row: SessionWaiterRow): SessionWaiter {
  return { waiterId: row.waiter_id, queue: row.queue, pool: row.pool, agentId: row.agent_id, enqueuedAtMs: Number(row.enqueued_at_ms), aliveUntilMs: Number(row.alive_until_ms) };
}

/** The place (1-based) of `agentId`'s first waiter among `waiters` (for `queue` only when given), and how many they are. */
export function lineOf(waiters: readonly { agent_id: string; queue: string }[], agentId: string, queue?: string): { waiting: number; position: number | null } {
  const index = waiters.findIndex((w) => w.agent_id === agentId && (queue === undefined || w.queue === queue));
  return { waiting: waiters.length, position: index < 0 ? null : index + 1 };
}

/**
 * The id `onChange` reports when a job in a session ends (decision 0801): its session keeps the
 * lease, so no lease is freed to tell replicas, whose waiters for the job otherwise heard of its
 * end only at their poll. Never a queue's or pool's id (those have no colon).
 */
export function sessionJobEndedId(jobId: string): string {
  return `job:${jobId}`;
}

/**
 * The id `onChange` reports when a bench worker was added or revoked, or changed the boards it
 * reports, on any replica (decision 0860): each replica's roster of workers reads the store again
 * instead of handing out a revoked worker's instance, or missing a new one, for its cache time.
 * Never a queue's or pool's id (those have no colon).
 */
export const WORKERS_CHANGED_ID = 'workers:changed';

/** Listeners of `onChange`, called after the current call stack (a SQLite trigger fires inside its transaction). */
export class QueueChangeListeners {
  private readonly listeners = new Set<(queueOrPool?: string) => void>();

  add(listener: (queueOrPool?: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** `queueOrPool` may have moved; every queue when undefined. */
  emit(queueOrPool: string | undefined): void {
    queueMicrotask(() => {
      for (const listener of [...this.listeners]) listener(queueOrPool);
    });
  }
}
