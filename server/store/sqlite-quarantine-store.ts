import type BetterSqlite3 from 'better-sqlite3';
import { type BoardHealthRecord, type BoardHealthStore, healthyBoardRecord } from './board-health-store.js';

interface BoardHealthRow {
  consecutive_failures: number;
  last_failure: string | null;
  quarantined_since_ms: number | null;
  quarantine_reason: string | null;
}

/**
 * Board health (`BoardHealthStore`; the probe backend takes it as its quarantine store) in a table
 * of the bench service's SQLite database, so a quarantine survives a restart. Built by
 * `SqliteBenchStore` on its database (its migrations create the table, bench-store-migrations.ts).
 * Each `put` is one committed statement (the database runs with `synchronous=FULL`).
 */
export class SqliteQuarantineStore implements BoardHealthStore {
  private readonly select: BetterSqlite3.Statement<[string]>;
  private readonly upsert: BetterSqlite3.Statement<[string, number, string | null, number | null, string | null]>;

  constructor(db: BetterSqlite3.Database) {
    this.select = db.prepare('SELECT consecutive_failures, last_failure, quarantined_since_ms, quarantine_reason FROM board_health WHERE board = ?');
    this.upsert = db.prepare(`
      INSERT INTO board_health (board, consecutive_failures, last_failure, quarantined_since_ms, quarantine_reason) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (board) DO UPDATE SET
        consecutive_failures = excluded.consecutive_failures,
        last_failure = excluded.last_failure,
        quarantined_since_ms = excluded.quarantined_since_ms,
        quarantine_reason = excluded.quarantine_reason`);
  }

  async get(boardId: string): Promise<BoardHealthRecord> {
    const row = this.select.get(boardId) as BoardHealthRow | undefined;
    if (!row) return { ...healthyBoardRecord };
    return {
      consecutiveFailures: row.consecutive_failures,
      lastFailure: row.last_failure ?? undefined,
      quarantine:
        row.quarantined_since_ms !== null && row.quarantine_reason !== null ? { sinceMs: row.quarantined_since_ms, reason: row.quarantine_reason } : undefined,
    };
  }

  async put(boardId: string, health: BoardHealthRecord): Promise<void> {
    if (!Number.isInteger(health.consecutiveFailures) || health.consecutiveFailures < 0) {
      throw new RangeError(`board ${boardId}: consecutiveFailures must be a non-negative integer, got ${health.consecutiveFailures}`);
    }
    this.upsert.run(
      boardId,
      health.consecutiveFailures,
      health.lastFailure ?? null,
      health.quarantine?.sinceMs ?? null,
      health.quarantine?.reason ?? null,
    );
  }
}
