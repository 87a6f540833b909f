import pg from 'pg';
import { type Clock, systemClock, type TimerHandle } from '../../../../core/clock.js';
import { lineOf, QueueChangeListeners, type SessionQueueStore, type SessionWaiter, type SessionWaiterRow, sessionWaitersTable, turnOf, type WaiterTurn, waiterFromRow, WORKERS_CHANGED_ID } from '../session-queue-store.js';
import { QUEUE_ORDER_LOCK_CLASS } from '../sql/dialect.js';
import type { PgDatabase } from './pg-database.js';

/** The channel every replica LISTENs on; the payload is a queue or pool id, `job:<id>` when a job in a session ended (decision 0801), or `WORKERS_CHANGED_ID` (0860). */
const CHANNEL = 'hilbench_session_queue';
/** After the LISTEN connection failed, the next try waits this long (the bounded poll covers the gap). */
export const RELISTEN_AFTER_MS = 5_000;

/**
 * Migration 4 of the PostgreSQL bench store: the session queue (decision 0555), and triggers that
 * NOTIFY every replica when a lease is freed or a waiter leaves, whichever statement did it (a
 * NOTIFY is delivered when its transaction commits, never for one rolled back).
 */
export const PG_SESSION_QUEUE_MIGRATION = `${sessionWaitersTable('seq BIGSERIAL PRIMARY KEY')}
  CREATE FUNCTION hilbench_lease_freed() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM pg_notify('${CHANNEL}', OLD.board);
    IF OLD.instance IS DISTINCT FROM OLD.board THEN PERFORM pg_notify('${CHANNEL}', OLD.instance); END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER leases_notify_freed AFTER DELETE ON leases FOR EACH ROW EXECUTE FUNCTION hilbench_lease_freed();
  CREATE FUNCTION hilbench_waiter_left() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM pg_notify('${CHANNEL}', OLD.queue);
    RETURN NULL;
  END $$;
  CREATE TRIGGER session_waiters_notify_left AFTER DELETE ON session_waiters FOR EACH ROW EXECUTE FUNCTION hilbench_waiter_left();
`;

/**
 * Migration 7 of the PostgreSQL bench store: a worker added, revoked, or reporting other boards
 * NOTIFYs every replica with `WORKERS_CHANGED_ID` (decision 0860), so no replica's roster hands out
 * a revoked worker's instance for its cache time. A heartbeat that reports the same boards (the
 * same text) notifies nothing.
 */
export const PG_WORKERS_CHANGED_MIGRATION = `
  CREATE FUNCTION hilbench_workers_changed() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF TG_OP = 'INSERT' OR OLD.revoked_at_ms IS DISTINCT FROM NEW.revoked_at_ms OR OLD.boards_json IS DISTINCT FROM NEW.boards_json THEN
      PERFORM pg_notify('${CHANNEL}', '${WORKERS_CHANGED_ID}');
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER workers_notify_changed AFTER INSERT OR UPDATE OF revoked_at_ms, boards_json ON workers FOR EACH ROW
    EXECUTE FUNCTION hilbench_workers_changed();
`;

/**
 * Migration 6 of the PostgreSQL bench store: a job in a session that ends (done or failed, by its
 * worker, a cancel or a sweep) NOTIFYs every replica with `sessionJobEndedId` (decision 0801),
 * as a session-less job's end does by freeing its lease.
 */
export const PG_SESSION_JOB_END_MIGRATION = `
  CREATE FUNCTION hilbench_session_job_ended() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM pg_notify('${CHANNEL}', 'job:' || NEW.job_id);
    RETURN NULL;
  END $$;
  CREATE TRIGGER jobs_notify_session_job_ended AFTER UPDATE OF state ON jobs FOR EACH ROW
    WHEN (NEW.session_id IS NOT NULL AND NEW.state IN ('done', 'failed') AND OLD.state NOT IN ('done', 'failed'))
    EXECUTE FUNCTION hilbench_session_job_ended();
`;

/**
 * The session queue on PostgreSQL (decision 0555), shared by every replica. Each statement is
 * short; the order is the `seq` the database assigns. Events come by LISTEN on one connection of
 * its own, opened when the first listener subscribes. A lost connection (a database restart,
 * decision 0516) is dropped and opened again by a timer of the injected clock, every
 * `RELISTEN_AFTER_MS` until it is back (decision 0600), while the waiters' bounded poll
 * carries on without it. What was notified while nobody listened is lost, so once listening again
 * the store tells its listeners that any queue may have moved.
 */
export class PgSessionQueue implements SessionQueueStore {
  private readonly changes = new QueueChangeListeners();
  private listener: pg.Client | undefined;
  private opening: Promise<void> | undefined;
  private lastListenFailedAtMs = Number.NEGATIVE_INFINITY;
  /** The next try to listen again, while a lost or failed connection waits for its turn. */
  private retry: TimerHandle | undefined;
  /** A LISTEN connection was open before and lost: events may have been missed meanwhile. */
  private missedEvents = false;
  private subscribers = 0;
  private closed = false;

  constructor(
    private readonly db: PgDatabase,
    private readonly clock: Clock = systemClock,
  ) {}

  async enqueue(waiter: SessionWaiter): Promise<number> {
    return this.db.write(async (q) => {
      await q('DELETE FROM session_waiters WHERE alive_until_ms <= $1', [waiter.enqueuedAtMs]);
      return insert(q, waiter);
    });
  }

  async renew(waiter: SessionWaiter): Promise<number> {
    this.relisten();
    return this.db.write(async (q) => {
      const [row] = await q<{ seq: number }>('UPDATE session_waiters SET alive_until_ms = $1 WHERE waiter_id = $2 RETURNING seq', [waiter.aliveUntilMs, waiter.waiterId]);
      return row ? Number(row.seq) : insert(q, waiter);
    });
  }

  async leave(waiterId: string): Promise<void> {
    await this.db.query('DELETE FROM session_waiters WHERE waiter_id = $1', [waiterId]);
  }

  async turn(waiterId: string, nowMs: number): Promise<WaiterTurn | null> {
    // One statement (one snapshot): the waiter itself (live or not) and the live waiters of its pool up to it.
    const rows = await this.db.query<SessionWaiterRow>(
      `SELECT w.* FROM session_waiters me JOIN session_waiters w ON w.pool = me.pool AND w.seq <= me.seq
       WHERE me.waiter_id = $1 AND (w.alive_until_ms > $2 OR w.seq = me.seq) ORDER BY w.seq`,
      [waiterId, nowMs],
    );
    return turnOf(rows, waiterId);
  }

  async line(pool: string, agentId: string, nowMs: number, queue?: string): Promise<{ waiting: number; position: number | null }> {
    return lineOf(await this.live(pool, nowMs), agentId, queue);
  }

  async waiters(pool: string, nowMs: number): Promise<SessionWaiter[]> {
    return (await this.live(pool, nowMs)).map(waiterFromRow);
  }

  private live(pool: string, nowMs: number): Promise<SessionWaiterRow[]> {
    return this.db.query<SessionWaiterRow>('SELECT * FROM session_waiters WHERE pool = $1 AND alive_until_ms > $2 ORDER BY seq', [pool, nowMs]);
  }

  onChange(listener: (queueOrPool?: string) => void): () => void {
    const remove = this.changes.add(listener);
    this.subscribers++;
    this.relisten();
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      remove();
      this.subscribers--;
    };
  }

  async listening(): Promise<void> {
    await this.opening;
  }

  /**
   * Opens the LISTEN connection when someone listens and none is open; after a failure not before
   * `RELISTEN_AFTER_MS` has passed, for which a timer of the injected clock then waits.
   */
  private relisten(): void {
    if (this.closed || this.subscribers === 0 || this.listener || this.opening || this.retry) return;
    const waitMs = this.lastListenFailedAtMs + RELISTEN_AFTER_MS - this.clock.nowMs();
    if (waitMs > 0) {
      this.retry = this.clock.setTimeout(() => {
        this.retry = undefined;
        this.relisten();
      }, waitMs);
      return;
    }
    const client = new pg.Client(this.db.pool.options);
    /** The connection is gone (`failed`: it failed, rather than closed by us): the next try is due. */
    const gone = (failed: boolean) => {
      if (failed) this.lastListenFailedAtMs = this.clock.nowMs();
      const wasListening = this.listener === client;
      if (wasListening) {
        this.listener = undefined;
        this.missedEvents = true;
      }
      if (failed) void client.end().catch(() => undefined);
      // Only a connection that was listening is tried again from here; a failed opening tries itself.
      if (wasListening) this.relisten();
    };
    // A connection the server ended (57P01 at a restart) must not end the process (decision 0516).
    client.on('error', () => gone(true));
    client.on('end', () => gone(!this.closed));
    client.on('notification', (message) => {
      if (message.channel === CHANNEL && message.payload) this.changes.emit(message.payload);
    });
    this.opening = (async () => {
      let opened = false;
      try {
        await client.connect();
        await client.query(`LISTEN ${CHANNEL}`);
        opened = true;
      } catch {
        this.lastListenFailedAtMs = this.clock.nowMs();
        void client.end().catch(() => undefined);
      } finally {
        this.opening = undefined;
      }
      if (!opened) {
        this.relisten();
        return;
      }
      if (this.closed) {
        await client.end().catch(() => undefined);
        return;
      }
      this.listener = client;
      // Whatever was notified while nobody listened is lost: every waiter looks once.
      if (this.missedEvents) {
        this.missedEvents = false;
        this.changes.emit(undefined);
      }
    })();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry !== undefined) this.clock.clearTimeout(this.retry);
    this.retry = undefined;
    await this.opening;
    await this.listener?.end().catch(() => undefined);
    this.listener = undefined;
  }
}

/**
 * Adds `w` at the back of its pool's line. A `BIGSERIAL` number is drawn when the INSERT runs, not
 * when it commits, so two waiters joining at once could become visible out of their numbers' order
 * and the later one read itself ahead of an earlier one it then overtakes (decision 1030: waiters
 * join only at the back). The pool's queue-order lock, held to the commit, makes the numbers'
 * order the order they become visible in; other pools' waiters do not wait.
 */
async function insert(q: Parameters<Parameters<PgDatabase['write']>[0]>[0], w: SessionWaiter): Promise<number> {
  await q('SELECT pg_advisory_xact_lock($1, hashtext($2))', [QUEUE_ORDER_LOCK_CLASS, w.pool]);
  const [row] = await q<{ seq: number }>(
    'INSERT INTO session_waiters (waiter_id, queue, pool, agent_id, enqueued_at_ms, alive_until_ms) VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq',
    [w.waiterId, w.queue, w.pool, w.agentId, w.enqueuedAtMs, w.aliveUntilMs],
  );
  return Number(row!.seq);
}
