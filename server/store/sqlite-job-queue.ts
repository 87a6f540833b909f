import type Database from 'better-sqlite3';
import type { JobClaimStatus, JobRecord, JobState, UartRecord } from './bench-store.js';
import { type JobRow, jobFromRow, uartJson } from './sqlite-bench-rows.js';
import { expireDue, renewAfterJob } from './sqlite-session-leases.js';

/**
 * The job queue of the SQLite bench store: workers claim queued jobs, mark them running, renew
 * their claims (saving UART), and jobs whose worker vanished are failed. Each call is one
 * IMMEDIATE transaction, so a claim and the one-active-job-per-board rule are checked and
 * written together.
 */

/**
 * The oldest queued job on one of `boards` (instance ids, decision 0510) whose instance is idle, moved to `flashing` for the worker;
 * nothing for a revoked worker (a claim it was already waiting in when revoked, on any replica).
 */
export function claimJob(
  db: Database.Database,
  request: { workerId: string; boards: readonly string[]; nowMs: number; claimMs: number | null },
): JobRecord | undefined {
  if (request.boards.length === 0) return undefined;
  return db
    .transaction((): JobRecord | undefined => {
      // Due sessions expire first: a queued job of a session that ran out is cancelled, not run.
      expireDue(db, request.nowMs);
      if (isRevoked(db, request.workerId)) return undefined;
      const placeholders = request.boards.map(() => '?').join(', ');
      const row = db
        .prepare(
          `SELECT q.job_id FROM jobs q
           WHERE q.state = 'queued' AND q.instance IN (${placeholders})
             AND NOT EXISTS (SELECT 1 FROM jobs a WHERE a.instance = q.instance AND a.state IN ('flashing', 'running'))
           ORDER BY q.created_at_ms, q.rowid LIMIT 1`,
        )
        .get(...request.boards) as { job_id: string } | undefined;
      if (!row) return undefined;
      const expiresAtMs = request.claimMs === null ? null : request.nowMs + request.claimMs;
      db.prepare(
        `UPDATE jobs SET state = 'flashing', started_at_ms = ?, worker_id = ?, claim_expires_at_ms = ? WHERE job_id = ? AND state = 'queued'`,
      ).run(request.nowMs, request.workerId, expiresAtMs, row.job_id);
      return jobFromRow(db.prepare('SELECT * FROM jobs WHERE job_id = ?').get(row.job_id) as JobRow);
    })
    .immediate();
}

/** Whether `workerId` is a bench worker an administrator revoked (the server's own worker has no row). */
export function isRevoked(db: Database.Database, workerId: string): boolean {
  return db.prepare('SELECT 1 FROM workers WHERE worker_id = ? AND revoked_at_ms IS NOT NULL').get(workerId) !== undefined;
}

function claimStatus(db: Database.Database, jobId: string, workerId: string): JobClaimStatus {
  const row = db.prepare('SELECT state, worker_id, cancel_reason FROM jobs WHERE job_id = ?').get(jobId) as
    | { state: JobState; worker_id: string | null; cancel_reason: string | null }
    | undefined;
  if (!row) return { kind: 'lost', state: 'failed' };
  if (row.worker_id !== workerId || (row.state !== 'flashing' && row.state !== 'running')) return { kind: 'lost', state: row.state };
  return { kind: 'held', cancelReason: row.cancel_reason };
}

/** flashing → running for the worker holding the job. */
export function markJobRunning(db: Database.Database, jobId: string, workerId: string, nowMs: number): JobClaimStatus {
  return db
    .transaction(() => {
      db.prepare("UPDATE jobs SET state = 'running', running_at_ms = ? WHERE job_id = ? AND worker_id = ? AND state = 'flashing'").run(
        nowMs,
        jobId,
        workerId,
      );
      return claimStatus(db, jobId, workerId);
    })
    .immediate();
}

/** Extends the worker's claim and saves the UART so far; says whether the job was asked to stop. */
export function renewJobClaim(
  db: Database.Database,
  jobId: string,
  workerId: string,
  renewal: { nowMs: number; claimMs: number | null; uart?: UartRecord },
): JobClaimStatus {
  return db
    .transaction(() => {
      const status = claimStatus(db, jobId, workerId);
      if (status.kind === 'lost') return status;
      const expiresAtMs = renewal.claimMs === null ? null : renewal.nowMs + renewal.claimMs;
      db.prepare('UPDATE jobs SET claim_expires_at_ms = ? WHERE job_id = ?').run(expiresAtMs, jobId);
      if (renewal.uart) {
        db.prepare('UPDATE jobs SET uart_bytes = ?, uart_json = ? WHERE job_id = ?').run(Buffer.from(renewal.uart.bytes), uartJson(renewal.uart), jobId);
      }
      return status;
    })
    .immediate();
}

/** A queued job fails as cancelled now; a flashing or running one is asked to stop (first reason stands). */
export function requestJobCancel(db: Database.Database, jobId: string, reason: string, nowMs: number): JobRecord | undefined {
  return db
    .transaction(() => {
      db.prepare(
        `UPDATE jobs SET state = 'failed', failure_kind = 'cancelled', failure_message = ?, finished_at_ms = ? WHERE job_id = ? AND state = 'queued'`,
      ).run(`cancelled before it started: ${reason}`, nowMs, jobId);
      db.prepare("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = ? AND EXISTS (SELECT 1 FROM jobs WHERE job_id = ? AND state = 'failed')").run(
        jobId,
        jobId,
      );
      db.prepare("UPDATE jobs SET cancel_reason = ? WHERE job_id = ? AND state IN ('flashing', 'running') AND cancel_reason IS NULL").run(reason, jobId);
      const row = db.prepare('SELECT * FROM jobs WHERE job_id = ?').get(jobId) as JobRow | undefined;
      return row && jobFromRow(row);
    })
    .immediate();
}

/** Fails one flashing or running job as `interrupted`, keeping its saved UART; frees its lease, renews its session. */
function interrupt(db: Database.Database, row: JobRow, message: string, nowMs: number): JobRecord {
  db.prepare("UPDATE jobs SET state = 'failed', failure_kind = 'interrupted', failure_message = ?, finished_at_ms = ? WHERE job_id = ?").run(
    message,
    nowMs,
    row.job_id,
  );
  db.prepare("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = ?").run(row.job_id);
  // The job ended now: its session's idle time starts now, not when the worker went silent.
  renewAfterJob(db, row.session_id, nowMs);
  return jobFromRow(db.prepare('SELECT * FROM jobs WHERE job_id = ?').get(row.job_id) as JobRow);
}

/** Lapsing claims on flashing or running jobs moved to at least `untilMs`; how many moved. */
export function extendClaims(db: Database.Database, untilMs: number): number {
  return db
    .prepare(
      `UPDATE jobs SET claim_expires_at_ms = ? WHERE state IN ('flashing', 'running') AND claim_expires_at_ms IS NOT NULL AND claim_expires_at_ms < ?`,
    )
    .run(untilMs, untilMs).changes;
}

/** Jobs whose worker stopped renewing its claim: failed as interrupted. */
export function failLapsedClaims(db: Database.Database, nowMs: number): JobRecord[] {
  return db
    .transaction(() => {
      const lapsed = db
        .prepare(
          `SELECT * FROM jobs WHERE state IN ('flashing', 'running') AND claim_expires_at_ms IS NOT NULL AND claim_expires_at_ms <= ?
           ORDER BY created_at_ms, rowid`,
        )
        .all(nowMs) as JobRow[];
      return lapsed.map((row) =>
        interrupt(
          db,
          row,
          `worker ${row.worker_id ?? '?'} stopped answering while this job was ${row.state} (its claim lapsed); the UART it reported is kept; submit the job again`,
          nowMs,
        ),
      );
    })
    .immediate();
}

/** The worker's flashing or running jobs, except `keep`, failed as interrupted with `reason`. */
export function releaseWorkerJobs(
  db: Database.Database,
  workerId: string,
  release: { reason: string; nowMs: number; keep?: readonly string[] },
): JobRecord[] {
  const keep = new Set(release.keep ?? []);
  return db
    .transaction(() => {
      const held = db
        .prepare("SELECT * FROM jobs WHERE worker_id = ? AND state IN ('flashing', 'running') ORDER BY created_at_ms, rowid")
        .all(workerId) as JobRow[];
      return held.filter((row) => !keep.has(row.job_id)).map((row) => interrupt(db, row, `${release.reason} while this job was ${row.state}; submit it again`, release.nowMs));
    })
    .immediate();
}

/** Queued jobs created at or before the cutoff: failed as unavailable (no worker started them in time). */
export function failOverdueQueuedJobs(db: Database.Database, createdAtOrBeforeMs: number, failure: { reason: string; nowMs: number }): JobRecord[] {
  return db
    .transaction(() => {
      const overdue = db
        .prepare("SELECT * FROM jobs WHERE state = 'queued' AND created_at_ms <= ? ORDER BY created_at_ms, rowid")
        .all(createdAtOrBeforeMs) as JobRow[];
      return overdue.map((row) => {
        db.prepare("UPDATE jobs SET state = 'failed', failure_kind = 'unavailable', failure_message = ?, finished_at_ms = ? WHERE job_id = ?").run(
          failure.reason,
          failure.nowMs,
          row.job_id,
        );
        db.prepare("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = ?").run(row.job_id);
        renewAfterJob(db, row.session_id, failure.nowMs);
        return jobFromRow(db.prepare('SELECT * FROM jobs WHERE job_id = ?').get(row.job_id) as JobRow);
      });
    })
    .immediate();
}
