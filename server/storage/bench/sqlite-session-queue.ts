import type Database from 'better-sqlite3';
import { lineOf, QueueChangeListeners, type SessionQueueStore, type SessionWaiter, type SessionWaiterRow, sessionWaitersTable, waiterFromRow } from './session-queue-store.js';

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

  async position(waiterId: string, nowMs: number): Promise<number | null> {
    const me = this.db.prepare('SELECT queue, seq FROM session_waiters WHERE waiter_id = ?').get(waiterId) as { queue: string; seq: number } | undefined;
    if (!me) return null;
    const ahead = this.db.prepare('SELECT COUNT(*) AS n FROM session_waiters WHERE queue = ? AND seq < ? AND alive_until_ms > ?').get(me.queue, me.seq, nowMs) as { n: number };
    return ahead.n + 1;
  }

  async line(queue: string, agentId: string, nowMs: number): Promise<{ waiting: number; position: number | null }> {
    return lineOf(this.live(queue, nowMs), agentId);
  }

  async waiters(queue: string, nowMs: number): Promise<SessionWaiter[]> {
    return this.live(queue, nowMs).map(waiterFromRow);
  }

  private live(queue: string, nowMs: number): SessionWaiterRow[] {
    return this.db.prepare('SELECT * FROM session_waiters WHERE queue = ? AND alive_until_ms > ? ORDER BY seq').all(queue, nowMs) as SessionWaiterRow[];
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
