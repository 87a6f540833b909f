import type Database from 'better-sqlite3';
import type { CreateJobResult, JobOutcome, JobRecord, JobState, SessionRecord } from './bench-store.js';
import { BoardBusyError } from './bench-store.js';
import { type JobRow, type SessionRow, jobFromRow, sessionFromRow, uartJson } from './sqlite-bench-rows.js';
import { expireDue, leaseOn, renewAfterJob } from './sqlite-session-leases.js';

/**
 * The job state machine of the SQLite bench store: create (with its lease or session checks),
 * move through flashing and running, finish, and recover after a restart. Each call is one
 * IMMEDIATE transaction.
 */

/** Creates a queued job when its session or the board's lease allows it and the board's queue has room. */
export function createJob(db: Database.Database, job: JobRecord, options: { maxQueuedPerBoard: number; nowMs: number }): CreateJobResult {
  return db
    .transaction((): CreateJobResult => {
      expireDue(db, options.nowMs);
      if (job.sessionId !== null) {
        const row = db.prepare('SELECT * FROM sessions WHERE session_id = ?').get(job.sessionId) as SessionRow | undefined;
        // Another agent's session is reported exactly like a missing one: existence is not revealed.
        if (!row || row.agent_id !== job.agentId) return { kind: 'session-not-found' };
        const session = sessionFromRow(row);
        if (session.state !== 'active') return { kind: 'session-not-active', session };
        if (session.board !== job.board) return { kind: 'session-other-board', session };
      } else {
        const lease = leaseOn(db, job.board, options.nowMs);
        if (lease) return { kind: 'board-leased', lease };
      }
      const { queued } = db
        .prepare("SELECT COUNT(*) AS queued FROM jobs WHERE board = ? AND state = 'queued'")
        .get(job.board) as { queued: number };
      if (queued >= options.maxQueuedPerBoard) return { kind: 'queue-full', queued };
      db.prepare(
        `INSERT INTO jobs (job_id, agent_id, board, session_id, state, firmware_sha256, firmware_size_bytes, elf_json,
           uart_seconds, created_at_ms)
         VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?)`,
      ).run(
        job.jobId,
        job.agentId,
        job.board,
        job.sessionId,
        job.firmware.sha256,
        job.firmware.sizeBytes,
        JSON.stringify(job.firmware.elf),
        job.uartSeconds,
        job.createdAtMs,
      );
      if (job.sessionId === null) {
        db.prepare("INSERT INTO leases (board, holder_kind, holder_id, agent_id) VALUES (?, 'job', ?, ?)").run(job.board, job.jobId, job.agentId);
      }
      return { kind: 'created', job: { ...job, state: 'queued' } };
    })
    .immediate();
}

/** Moves a job from queued to flashing, or from flashing to running; a cancel that came first wins. */
export function markJobPhase(db: Database.Database, jobId: string, phase: 'flashing' | 'running', nowMs: number): void {
  const column = phase === 'flashing' ? 'started_at_ms' : 'running_at_ms';
  const from = phase === 'flashing' ? 'queued' : 'flashing';
  db.transaction(() => {
    if (phase === 'flashing') {
      // Checked first for an error that names the job in the way; the unique index is the backstop.
      const busy = db
        .prepare(
          `SELECT j.board, j.job_id FROM jobs me JOIN jobs j ON j.board = me.board AND j.job_id <> me.job_id
           WHERE me.job_id = ? AND me.state = 'queued' AND j.state IN ('flashing', 'running') LIMIT 1`,
        )
        .get(jobId) as { board: string; job_id: string } | undefined;
      if (busy) throw new BoardBusyError(busy.board, jobId, busy.job_id);
    }
    const result = db.prepare(`UPDATE jobs SET state = ?, ${column} = ? WHERE job_id = ? AND state = ?`).run(phase, nowMs, jobId, from);
    if (result.changes === 1) return;
    // A job cancelled (its session closed) while the dispatcher was starting it: the cancel wins.
    const current = db.prepare('SELECT state FROM jobs WHERE job_id = ?').get(jobId) as { state: JobState } | undefined;
    if (current?.state === 'failed') return;
    throw new Error(`job ${jobId} cannot move to ${phase}: it is not ${from}`);
  }).immediate();
}

/** Records a job's outcome (the first one stands), renews its session and frees its job lease. */
export function finishJob(db: Database.Database, jobId: string, outcome: JobOutcome): JobRecord {
  return db
    .transaction(() => {
      const uart = outcome.uart ?? null;
      const before = db.prepare('SELECT state, session_id FROM jobs WHERE job_id = ?').get(jobId) as
        | { state: JobState; session_id: string | null }
        | undefined;
      if (before?.state === 'done' || before?.state === 'failed') {
        // Already finished (e.g. cancelled when its session closed): the first outcome stands.
      } else if (outcome.state === 'done') {
        db.prepare(
          `UPDATE jobs SET state = 'done', finished_at_ms = ?, uart_bytes = ?, uart_json = ?, stop_json = ?, flash_ms = ?, run_ms = ?
           WHERE job_id = ?`,
        ).run(outcome.nowMs, Buffer.from(outcome.uart.bytes), uartJson(outcome.uart), JSON.stringify(outcome.stop), outcome.flashMs, outcome.runMs, jobId);
      } else {
        db.prepare(
          `UPDATE jobs SET state = 'failed', finished_at_ms = ?, failure_kind = ?, failure_message = ?, uart_bytes = ?, uart_json = ?
           WHERE job_id = ?`,
        ).run(outcome.nowMs, outcome.failure.kind, outcome.failure.message, uart ? Buffer.from(uart.bytes) : null, uart ? uartJson(uart) : null, jobId);
      }
      if (before && before.state !== 'done' && before.state !== 'failed') renewAfterJob(db, before.session_id, outcome.nowMs);
      db.prepare("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = ?").run(jobId);
      const row = db.prepare('SELECT * FROM jobs WHERE job_id = ?').get(jobId) as JobRow | undefined;
      if (!row) throw new Error(`job ${jobId} vanished while finishing`);
      return jobFromRow(row);
    })
    .immediate();
}

/**
 * After a restart: jobs caught flashing or running are failed as `interrupted`, due sessions
 * expire, and the queued jobs are returned to be dispatched again.
 */
export function recoverAfterRestart(
  db: Database.Database,
  nowMs: number,
): { requeued: JobRecord[]; interrupted: JobRecord[]; expired: SessionRecord[] } {
  return db
    .transaction(() => {
      const stuck = db.prepare("SELECT * FROM jobs WHERE state IN ('flashing', 'running') ORDER BY created_at_ms, rowid").all() as JobRow[];
      for (const row of stuck) {
        db.prepare("UPDATE jobs SET state = 'failed', failure_kind = 'interrupted', failure_message = ?, finished_at_ms = ? WHERE job_id = ?").run(
          `the bench service restarted while this job was ${row.state}; submit it again`,
          nowMs,
          row.job_id,
        );
        db.prepare("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = ?").run(row.job_id);
        // The job ended with the restart: its session's idle time starts now, not at the crash.
        renewAfterJob(db, row.session_id, nowMs);
      }
      const expired = expireDue(db, nowMs);
      const requeued = (db.prepare("SELECT * FROM jobs WHERE state = 'queued' ORDER BY created_at_ms, rowid").all() as JobRow[]).map(jobFromRow);
      const interrupted = stuck.map((r) => jobFromRow(db.prepare('SELECT * FROM jobs WHERE job_id = ?').get(r.job_id) as JobRow));
      return { requeued, interrupted, expired };
    })
    .immediate();
}
