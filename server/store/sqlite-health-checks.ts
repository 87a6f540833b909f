import type Database from 'better-sqlite3';
import { isRevoked } from './sqlite-job-queue.js';
import {
  type HealthCheckOutcomeRecord,
  type HealthCheckRecord,
  type HealthCheckRow,
  type HealthCheckStore,
  failedOutcomeJson,
  healthCheckFromRow,
  type RequestHealthCheckResult,
} from './health-check-store.js';

/** Health checks of boards on workers in the bench store's SQLite database (`HealthCheckStore`). */
export class SqliteHealthChecks implements HealthCheckStore {
  constructor(private readonly db: Database.Database) {}

  private byId(checkId: string): HealthCheckRecord | undefined {
    const row = this.db.prepare('SELECT * FROM board_health_checks WHERE check_id = ?').get(checkId) as HealthCheckRow | undefined;
    return row && healthCheckFromRow(row);
  }

  async request(r: { checkId: string; board: string; workerId: string; timeoutMs: number; nowMs: number }): Promise<RequestHealthCheckResult> {
    const { db } = this;
    return db
      .transaction((): RequestHealthCheckResult => {
        const active = db.prepare("SELECT * FROM board_health_checks WHERE board = ? AND state IN ('requested', 'running')").get(r.board) as HealthCheckRow | undefined;
        if (active) return { kind: 'already-active', check: healthCheckFromRow(active) };
        db.prepare("INSERT INTO board_health_checks (check_id, board, worker_id, state, requested_at_ms, timeout_ms) VALUES (?, ?, ?, 'requested', ?, ?)").run(
          r.checkId,
          r.board,
          r.workerId,
          r.nowMs,
          r.timeoutMs,
        );
        return { kind: 'requested', check: this.byId(r.checkId)! };
      })
      .immediate();
  }

  async claim(workerId: string, boards: readonly string[], nowMs: number): Promise<HealthCheckRecord | undefined> {
    if (boards.length === 0) return undefined;
    const { db } = this;
    return db
      .transaction((): HealthCheckRecord | undefined => {
        const row = db
          .prepare(
            `SELECT check_id FROM board_health_checks WHERE worker_id = ? AND state = 'requested' AND board IN (${boards.map(() => '?').join(', ')})
             ORDER BY requested_at_ms, rowid LIMIT 1`,
          )
          .get(workerId, ...boards) as { check_id: string } | undefined;
        // A revoked worker's claim (it was waiting in it when revoked) takes nothing.
        if (!row || isRevoked(db, workerId)) return undefined;
        db.prepare("UPDATE board_health_checks SET state = 'running', started_at_ms = ? WHERE check_id = ?").run(nowMs, row.check_id);
        return this.byId(row.check_id);
      })
      .immediate();
  }

  async finish(checkId: string, workerId: string, outcome: HealthCheckOutcomeRecord, nowMs: number): Promise<HealthCheckRecord | undefined> {
    const changed = this.db
      .prepare("UPDATE board_health_checks SET state = 'done', finished_at_ms = ?, outcome_json = ? WHERE check_id = ? AND worker_id = ? AND state = 'running'")
      .run(nowMs, JSON.stringify(outcome), checkId, workerId).changes;
    return changed === 1 ? this.byId(checkId) : undefined;
  }

  async get(checkId: string): Promise<HealthCheckRecord | undefined> {
    return this.byId(checkId);
  }

  async active(): Promise<HealthCheckRecord[]> {
    const rows = this.db.prepare("SELECT * FROM board_health_checks WHERE state IN ('requested', 'running') ORDER BY requested_at_ms, rowid").all() as HealthCheckRow[];
    return rows.map(healthCheckFromRow);
  }

  async interrupt(workerId: string, options: { reason: string; nowMs: number }): Promise<HealthCheckRecord[]> {
    return this.failWhere("worker_id = ? AND state = 'running'", [workerId], options);
  }

  async failAllOf(workerId: string, options: { reason: string; nowMs: number }): Promise<HealthCheckRecord[]> {
    return this.failWhere("worker_id = ? AND state IN ('requested', 'running')", [workerId], options);
  }

  async expire(nowMs: number, options: { graceMs: number; reason: string }): Promise<HealthCheckRecord[]> {
    return this.failWhere("state IN ('requested', 'running') AND requested_at_ms + timeout_ms + ? <= ?", [options.graceMs, nowMs], { reason: options.reason, nowMs });
  }

  /** Ends every check matching `where` as failed with `reason`, in one transaction, oldest first. */
  private failWhere(where: string, params: unknown[], options: { reason: string; nowMs: number }): HealthCheckRecord[] {
    const { db } = this;
    return db
      .transaction((): HealthCheckRecord[] => {
        const ended = db.prepare(`SELECT check_id FROM board_health_checks WHERE ${where} ORDER BY requested_at_ms, rowid`).all(...params) as Array<{ check_id: string }>;
        const outcome = failedOutcomeJson(options.reason);
        const update = db.prepare("UPDATE board_health_checks SET state = 'done', finished_at_ms = ?, outcome_json = ? WHERE check_id = ?");
        for (const { check_id } of ended) update.run(options.nowMs, outcome, check_id);
        return ended.map((r) => this.byId(r.check_id)!);
      })
      .immediate();
  }
}
