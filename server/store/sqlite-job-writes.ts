import type Database from 'better-sqlite3';
import { type CreateJobResult, instanceField, instanceOf, type JobOutcome, type JobRecord, type JobState } from './bench-store.js';
import { type JobRow, type SessionRow, jobFromRow, sessionFromRow, uartJson } from './sqlite-bench-rows.js';
import { expireDue, firstFree, renewAfterJob } from './sqlite-session-leases.js';

/**
 * Creating and finishing jobs in the SQLite bench store (the claims in between are in
 * `sqlite-job-queue.ts`). Each call is one IMMEDIATE transaction.
 */

/** Creates a queued job when its session or the board's lease allows it and the board's queue has room. */
export function createJob(
  db: Database.Database,
  job: JobRecord,
  options: { maxQueuedPerBoard: number; nowMs: number; instances?: readonly string[] },
): CreateJobResult {
  return db
    .transaction((): CreateJobResult => {
      expireDue(db, options.nowMs);
      let instance: string;
      if (job.sessionId !== null) {
        const row = db.prepare('SELECT * FROM sessions WHERE session_id = ?').get(job.sessionId) as SessionRow | undefined;
        // Another agent's session is reported exactly like a missing one: existence is not revealed.
        if (!row || row.agent_id !== job.agentId) return { kind: 'session-not-found' };
        const session = sessionFromRow(row);
        if (session.state !== 'active') return { kind: 'session-not-active', session };
        if (session.board !== job.board) return { kind: 'session-other-board', session };
        // A job in a session runs on the session's instance; one asked for explicitly must be it.
        instance = instanceOf(session);
        if (job.instance !== undefined && job.instance !== instance) return { kind: 'session-other-board', session };
      } else {
        const candidates = job.instance !== undefined || !options.instances?.length ? [instanceOf(job)] : options.instances;
        const pick = firstFree(db, candidates, options.nowMs);
        if ('lease' in pick) return { kind: 'board-leased', lease: pick.lease };
        instance = pick.free;
      }
      const { queued } = db
        .prepare("SELECT COUNT(*) AS queued FROM jobs WHERE board = ? AND state = 'queued'")
        .get(job.board) as { queued: number };
      if (queued >= options.maxQueuedPerBoard) return { kind: 'queue-full', queued };
      db.prepare(
        `INSERT INTO jobs (job_id, agent_id, board, session_id, state, firmware_sha256, firmware_size_bytes, elf_json,
           uart_seconds, created_at_ms, instance)
         VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?)`,
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
        instance,
      );
      if (job.sessionId === null) {
        db.prepare("INSERT INTO leases (instance, board, holder_kind, holder_id, agent_id) VALUES (?, ?, 'job', ?, ?)").run(instance, job.board, job.jobId, job.agentId);
      }
      const { instance: _asked, ...rest } = job;
      return { kind: 'created', job: { ...rest, state: 'queued', ...instanceField(job.board, instance) } };
    })
    .immediate();
}

/** Records a job's outcome (the first one stands), renews its session and frees its job lease. */
export function finishJob(db: Database.Database, jobId: string, outcome: JobOutcome, options: { workerId?: string } = {}): JobRecord {
  return db
    .transaction(() => {
      const uart = outcome.uart ?? null;
      const before = db.prepare('SELECT state, session_id, worker_id FROM jobs WHERE job_id = ?').get(jobId) as
        | { state: JobState; session_id: string | null; worker_id: string | null }
        | undefined;
      const notTheWorkers = options.workerId !== undefined && before?.worker_id !== options.workerId;
      if (before?.state === 'done' || before?.state === 'failed' || notTheWorkers) {
        // Already finished (e.g. cancelled when its session closed), or reported by a worker that
        // does not hold it: the first outcome stands, and nothing changes.
        const row = db.prepare('SELECT * FROM jobs WHERE job_id = ?').get(jobId) as JobRow | undefined;
        if (!row) throw new Error(`job ${jobId} not found`);
        return jobFromRow(row);
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
      if (before) renewAfterJob(db, before.session_id, outcome.nowMs);
      db.prepare("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = ?").run(jobId);
      const row = db.prepare('SELECT * FROM jobs WHERE job_id = ?').get(jobId) as JobRow | undefined;
      if (!row) throw new Error(`job ${jobId} vanished while finishing`);
      return jobFromRow(row);
    })
    .immediate();
}
