import pg from 'pg';
import { type Clock, systemClock } from '../../../core/clock.js';
import { lineOf, QueueChangeListeners, type SessionQueueStore, type SessionWaiter, type SessionWaiterRow, sessionWaitersTable, waiterFromRow } from '../session-queue-store.js';
import type { PgDatabase } from './pg-database.js';

/** The channel every replica LISTENs on; the payload is a queue or pool id. */
const CHANNEL = 'hilbench_session_queue';
/** After the LISTEN connection failed, the next try waits this long (the bounded poll covers the gap). */
const RELISTEN_AFTER_MS = 5_000;

/**
 * Migration 9 of the PostgreSQL bench store: the session queue (decision 0555), and triggers that
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
 * The session queue on PostgreSQL (decision 0555), shared by every replica. Each statement is
 * short; the order is the `seq` the database assigns. Events come by LISTEN on one connection of
 * its own, opened when the first listener subscribes; a lost connection (a database restart,
 * decision 0516) is dropped and opened again on the next subscription or `relisten`, at most
 * every few seconds, while the waiters' bounded poll carries on without it.
 */
export class PgSessionQueue implements SessionQueueStore {
  private readonly changes = new QueueChangeListeners();
  private listener: pg.Client | undefined;
  private opening: Promise<void> | undefined;
  private lastListenFailedAtMs = Number.NEGATIVE_INFINITY;
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

  async position(waiterId: string, nowMs: number): Promise<number | null> {
    const [row] = await this.db.query<{ ahead: number | null }>(
      `SELECT (SELECT COUNT(*) FROM session_waiters w WHERE w.queue = me.queue AND w.seq < me.seq AND w.alive_until_ms > $2) AS ahead
       FROM session_waiters me WHERE me.waiter_id = $1`,
      [waiterId, nowMs],
    );
    return row ? Number(row.ahead) + 1 : null;
  }

  async line(queue: string, agentId: string, nowMs: number): Promise<{ waiting: number; position: number | null }> {
    return lineOf(await this.live(queue, nowMs), agentId);
  }

  async waiters(queue: string, nowMs: number): Promise<SessionWaiter[]> {
    return (await this.live(queue, nowMs)).map(waiterFromRow);
  }

  private live(queue: string, nowMs: number): Promise<SessionWaiterRow[]> {
    return this.db.query<SessionWaiterRow>('SELECT * FROM session_waiters WHERE queue = $1 AND alive_until_ms > $2 ORDER BY seq', [queue, nowMs]);
  }

  onChange(listener: (queueOrPool: string) => void): () => void {
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

  /** Opens the LISTEN connection when someone listens and none is open (not more often than `RELISTEN_AFTER_MS`). */
  private relisten(): void {
    if (this.closed || this.subscribers === 0 || this.listener || this.opening) return;
    if (this.clock.nowMs() - this.lastListenFailedAtMs < RELISTEN_AFTER_MS) return;
    const client = new pg.Client(this.db.pool.options);
    const failed = () => {
      this.lastListenFailedAtMs = this.clock.nowMs();
      if (this.listener === client) this.listener = undefined;
      void client.end().catch(() => undefined);
    };
    // A connection the server ended (57P01 at a restart) must not end the process (decision 0516).
    client.on('error', failed);
    client.on('end', () => {
      if (this.listener === client) this.listener = undefined;
    });
    client.on('notification', (message) => {
      if (message.channel === CHANNEL && message.payload) this.changes.emit(message.payload);
    });
    this.opening = (async () => {
      try {
        await client.connect();
        await client.query(`LISTEN ${CHANNEL}`);
        if (this.closed) await client.end();
        else this.listener = client;
      } catch {
        failed();
      } finally {
        this.opening = undefined;
      }
    })();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.opening;
    await this.listener?.end().catch(() => undefined);
    this.listener = undefined;
  }
}

async function insert(q: Parameters<Parameters<PgDatabase['write']>[0]>[0], w: SessionWaiter): Promise<number> {
  const [row] = await q<{ seq: number }>(
    'INSERT INTO session_waiters (waiter_id, queue, pool, agent_id, enqueued_at_ms, alive_until_ms) VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq',
    [w.waiterId, w.queue, w.pool, w.agentId, w.enqueuedAtMs, w.aliveUntilMs],
  );
  return Number(row!.seq);
}
