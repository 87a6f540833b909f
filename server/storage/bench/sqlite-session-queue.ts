import type Database from 'better-sqlite3';
import { lineOf, QueueChangeListeners, type SessionQueueStore, type SessionWaiter, type SessionWaiterRow, sessionWaitersTable, turnOf, type WaiterTurn, waiterFromRow } from './session-queue-store.js';

/** Migration 9 of the SQLite bench store: the session queue (decision 0555). */
export const SQLITE_SESSION_QUEUE_MIGRATION = sessionWaitersTable('seq INTEGER PRIMARY KEY AUTOINCREMENT');

/**
 * The session queue on SQLite (decision 0555). One process owns the file, so the events are
 * this connection's own: TEMP triggers on `leases`, `session_waiters` and `jobs` call a function of
 * this process when a lease is freed, a waiter leaves or a job in a session ends (decision 0801),
 * whichever code path did it.
 */
export class SqliteSessionQueue implements SessionQueueStore {
  private readonly changes = new QueueChangeListeners();

  constructor(private readonly db: Database.Database) {
    db.function('hilbench_session_queue_changed', { deterministic: false }, (first: unknown, second: unknown) => {
      for (const id of new Set([first, second])) if (typeof id === 'string') this.changes.emit(id);
      return null;
    });
    db.exec(`
      CREATE TEMP TRIGGER IF NOT EXISTS hilbench_lease_freed AFTER DELETE ON main.leases
        BEGIN SELECT hilbench_session_queue_changed(OLD.board, OLD.instance); END;
      CREATE TEMP TRIGGER IF NOT EXISTS hilbench_waiter_left AFTER DELETE ON main.session_waiters
        BEGIN SELECT hilbench_session_queue_changed(OLD.queue, OLD.pool); END;
      CREATE TEMP TRIGGER IF NOT EXISTS hilbench_session_job_ended AFTER UPDATE OF state ON main.jobs
        WHEN NEW.session_id IS NOT NULL AND NEW.state IN ('done', 'failed') AND OLD.state NOT IN ('done', 'failed')
        BEGIN SELECT hilbench_session_queue_changed('job:' || NEW.job_id, NULL); END;
    `);
  }

  async enqueue(waiter: SessionWaiter): Promise<number> {
    return this.db
      .transaction(() => {
        this.db.prepare('DELETE FROM session_waiters WHERE alive_until_ms <= ?').run(waiter.enqueuedAtMs);
        return this.insert(waiter);
      })
      .immediate();
  }

  private insert(w: SessionWaiter): number {
    const result = this.db
      .prepare('INSERT INTO session_waiters (waiter_id, queue, pool, agent_id, enqueued_at_ms, alive_until_ms) VALUES (?, ?, ?, ?, ?, ?)')
      .run(w.waiterId, w.queue, w.pool, w.agentId, w.enqueuedAtMs, w.aliveUntilMs);
    return Number(result.lastInsertRowid);
  }

  async renew(waiter: SessionWaiter): Promise<number> {
    return this.db
      .transaction(() => {
        const row = this.db.prepare('SELECT seq FROM session_waiters WHERE waiter_id = ?').get(waiter.waiterId) as { seq: number } | undefined;
        if (!row) return this.insert(waiter);
        this.db.prepare('UPDATE session_waiters SET alive_until_ms = ? WHERE waiter_id = ?').run(waiter.aliveUntilMs, waiter.waiterId);
        return row.seq;
      })
      .immediate();
  }

  async leave(waiterId: string): Promise<void> {
    this.db.prepare('DELETE FROM session_waiters WHERE waiter_id = ?').run(waiterId);
  }

  async turn(waiterId: string, nowMs: number): Promise<WaiterTurn | null> {
    // Read in one statement: the waiter itself (live or not) and the live waiters of its pool up to it.
    const rows = this.db
      .prepare(
        `SELECT w.* FROM session_waiters me JOIN session_waiters w ON w.pool = me.pool AND w.seq <= me.seq
         WHERE me.waiter_id = ? AND (w.alive_until_ms > ? OR w.seq = me.seq) ORDER BY w.seq`,
      )
      .all(waiterId, nowMs) as SessionWaiterRow[];
    return turnOf(rows, waiterId);
  }

  async line(pool: string, agentId: string, nowMs: number, queue?: string): Promise<{ waiting: number; position: number | null }> {
    return lineOf(this.live(pool, nowMs), agentId, queue);
  }

  async waiters(pool: string, nowMs: number): Promise<SessionWaiter[]> {
    return this.live(pool, nowMs).map(waiterFromRow);
  }

  private live(pool: string, nowMs: number): SessionWaiterRow[] {
    return this.db.prepare('SELECT * FROM session_waiters WHERE pool = ? AND alive_until_ms > ? ORDER BY seq').all(pool, nowMs) as SessionWaiterRow[];
  }

  onChange(listener: (queueOrPool?: string) => void): () => void {
    return this.changes.add(listener);
  }

  async listening(): Promise<void> {
    // The triggers report from the first statement on.
  }

  async close(): Promise<void> {
    // The TEMP triggers and the function end with the connection.
  }
}
