import type Database from 'better-sqlite3';
import { type WorkerBoardReport, type WorkerRecord, type WorkerRegistry, type WorkerRow, workerFromRow } from './worker-registry.js';

/** The worker registry in the bench store's SQLite database (table `workers`, migration 6). */
export class SqliteWorkerRegistry implements WorkerRegistry {
  constructor(private readonly db: Database.Database) {}

  async insert(worker: Pick<WorkerRecord, 'workerId' | 'label' | 'tokenSha256' | 'createdAtMs'>): Promise<void> {
    this.db
      .prepare("INSERT INTO workers (worker_id, label, token_sha256, created_at_ms, boards_json) VALUES (?, ?, ?, ?, '[]')")
      .run(worker.workerId, worker.label, worker.tokenSha256, worker.createdAtMs);
  }

  async get(workerId: string): Promise<WorkerRecord | undefined> {
    const row = this.db.prepare('SELECT * FROM workers WHERE worker_id = ?').get(workerId) as WorkerRow | undefined;
    return row && workerFromRow(row);
  }

  async findByTokenSha256(tokenSha256: string): Promise<WorkerRecord | undefined> {
    const row = this.db.prepare('SELECT * FROM workers WHERE token_sha256 = ?').get(tokenSha256) as WorkerRow | undefined;
    return row && workerFromRow(row);
  }

  async list(): Promise<WorkerRecord[]> {
    return (this.db.prepare('SELECT * FROM workers ORDER BY created_at_ms, rowid').all() as WorkerRow[]).map(workerFromRow);
  }

  async revoke(workerId: string, nowMs: number): Promise<WorkerRecord | undefined> {
    this.db.prepare('UPDATE workers SET revoked_at_ms = COALESCE(revoked_at_ms, ?) WHERE worker_id = ?').run(nowMs, workerId);
    return this.get(workerId);
  }

  async heardFrom(workerId: string, report: { nowMs: number; boards?: readonly WorkerBoardReport[] }): Promise<void> {
    if (report.boards) {
      this.db
        .prepare('UPDATE workers SET last_seen_at_ms = MAX(COALESCE(last_seen_at_ms, 0), ?), boards_json = ? WHERE worker_id = ?')
        .run(report.nowMs, JSON.stringify(report.boards), workerId);
    } else {
      this.db.prepare('UPDATE workers SET last_seen_at_ms = MAX(COALESCE(last_seen_at_ms, 0), ?) WHERE worker_id = ?').run(report.nowMs, workerId);
    }
  }
}
