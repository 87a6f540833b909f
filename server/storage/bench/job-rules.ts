import { type CreateJobResult, type FinishedJob, type FinishJobOptions, type HealthChange, instanceField, instanceOf, type JobOutcome, type JobRecord } from './bench-store.js';
import { changeHealth } from './board-health-rules.js';
import { type JobRow, jobFromRow, sessionFromRow, uartJson } from './bench-rows.js';
import { expireDue, firstFree, lockPoolSeeingCheck, lockSession, renewAfterJob } from './session-lease-rules.js';
import type { Dialect } from './sql/dialect.js';
import { one, run, type Steps } from '../sql-steps.js';

/**
 * Creating, cancelling and finishing jobs, once for both databases (decision 0545); the claims in
 * between are in `job-queue-rules.ts`. Each runs inside one write transaction. A job is created
 * under its pool's lock (the lease check and the queue limit count rows that do not exist yet);
 * every change of state is an UPDATE whose WHERE names the state it leaves, so of two racing
 * writers the database lets one win.
 */

export function* jobById(jobId: string): Steps<JobRecord | undefined> {
  const row = yield* one<JobRow>('SELECT * FROM jobs WHERE job_id = ?', [jobId]);
  return row && jobFromRow(row);
}

/** Creates a queued job when its session or the board's lease allows it and the board's queue has room. */
export function* createJob(
  d: Dialect,
  job: JobRecord,
  options: { maxQueuedPerBoard: number; nowMs: number; instances?: readonly string[] },
): Steps<CreateJobResult> {
  // The pool's lock (a board id names a pool, decision 0510): its lease checks and queue limit;
  // and no job for a board an administrator's health check holds (decision 0860).
  const checkSinceMs = yield* lockPoolSeeingCheck(d, job.board);
  if (checkSinceMs !== null) return { kind: 'board-health-check', requestedAtMs: Number(checkSinceMs) };
  let instance: string;
  if (job.sessionId !== null) {
    // A session due now must expire before a job could keep it alive.
    yield* expireDue(d, options.nowMs);
    // Locked, so a sweep expiring this session waits for the job (and then keeps the session alive).
    const row = yield* lockSession(d, job.sessionId);
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
    let pick = yield* firstFree(candidates, options.nowMs);
    // Sessions are expired only when one due now is in the way (decision 0600): the sweep before
    // every job cost each job a statement, though the sweep of the service expires them anyway.
    if ('lease' in pick && pick.dueSession) {
      yield* expireDue(d, options.nowMs);
      pick = yield* firstFree(candidates, options.nowMs);
    }
    if ('lease' in pick) return { kind: 'board-leased', lease: pick.lease };
    instance = pick.free;
  }
  // The queue limit is a condition of the INSERT (one statement fewer on the way of every job);
  // only a refused job pays for counting its answer.
  const queuedSql = "SELECT COUNT(*) FROM jobs WHERE board = ? AND state = 'queued'";
  const inserted = yield* run(
    `INSERT INTO jobs (job_id, agent_id, board, session_id, state, firmware_sha256, firmware_size_bytes, elf_json, uart_seconds, created_at_ms, instance)
     SELECT CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), 'queued', CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS TEXT),
       CAST(? AS DOUBLE PRECISION), CAST(? AS BIGINT), CAST(? AS TEXT)
     WHERE (${queuedSql}) < ?`,
    [
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
      job.board,
      options.maxQueuedPerBoard,
    ],
  );
  if (inserted === 0) return { kind: 'queue-full', queued: (yield* one<{ queued: number }>(queuedSql.replace('COUNT(*)', 'COUNT(*) AS queued'), [job.board]))!.queued };
  if (job.sessionId === null) {
    // The last statement: on PostgreSQL its COMMIT goes with it (decision 0980).
    yield* run("INSERT INTO leases (instance, board, holder_kind, holder_id, agent_id) VALUES (?, ?, 'job', ?, ?)", [instance, job.board, job.jobId, job.agentId], { last: true });
  }
  const { instance: _asked, ...rest } = job;
  return { kind: 'created', job: { ...rest, state: 'queued', ...instanceField(job.board, instance) } };
}

/** A queued job fails as cancelled now; a flashing or running one is asked to stop (the first reason stands). */
export function* requestJobCancel(jobId: string, reason: string, nowMs: number): Steps<JobRecord | undefined> {
  const cancelled = yield* run(
    "UPDATE jobs SET state = 'failed', failure_kind = 'cancelled', failure_message = ?, finished_at_ms = ? WHERE job_id = ? AND state = 'queued'",
    [`cancelled before it started: ${reason}`, nowMs, jobId],
  );
  if (cancelled > 0) yield* run("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = ?", [jobId]);
  else yield* run("UPDATE jobs SET cancel_reason = ? WHERE job_id = ? AND state IN ('flashing', 'running') AND cancel_reason IS NULL", [reason, jobId]);
  return yield* jobById(jobId);
}

/**
 * Records a job's outcome and frees the lease the job holds; an active session of the job is
 * renewed from `outcome.nowMs`. The first outcome wins, and with `workerId` only the claim's
 * holder may write one: both are conditions of the UPDATE (checked again under the row lock on
 * PostgreSQL), so a job finished meanwhile, or a worker that lost its claim, changes nothing.
 *
 * The job's session is locked before its row (the order every writer of both keeps). A job's
 * session never changes once it is created, so a caller that read the job passes it as
 * `sessionId` and saves the read of it (decision 0860); the UPDATE checks it all the same, and a
 * job it does not end (finished already, another worker's, or a session passed wrongly) is looked
 * at the long way.
 */
export function* finishJob(d: Dialect, jobId: string, outcome: JobOutcome, options: FinishJobOptions = {}): Steps<FinishedJob> {
  if (options.sessionId !== undefined) {
    const ended = yield* endJob(d, jobId, options.sessionId, outcome, options);
    if (ended) return ended;
  }
  const before = yield* one<{ session_id: string | null }>('SELECT session_id FROM jobs WHERE job_id = ?', [jobId]);
  if (!before) throw new Error(`job ${jobId} not found`);
  return (yield* endJob(d, jobId, before.session_id, outcome, options)) ?? { job: (yield* jobById(jobId))!, ended: false };
}

/** `finishJob` for a job of session `sessionId` (null: none); undefined when it did not end it. */
function* endJob(d: Dialect, jobId: string, sessionId: string | null, outcome: JobOutcome, options: FinishJobOptions): Steps<FinishedJob | undefined> {
  const { workerId } = options;
  if (sessionId !== null) yield* lockSession(d, sessionId);
  const unfinished =
    "job_id = ? AND state NOT IN ('done', 'failed') AND (CAST(? AS TEXT) IS NULL OR worker_id = ?) AND (session_id = ? OR (session_id IS NULL AND CAST(? AS TEXT) IS NULL))";
  const who = [jobId, workerId ?? null, workerId ?? null, sessionId, sessionId];
  const uart = outcome.uart ?? null;
  // Whether the board has another task waiting, as the end is written: the worker's next claim on it
  // need not look before it waits when none has (decision 0980). A task is a queued job or a health
  // check requested on the board or one of its instances (`b` itself, or `b.n@w`: board ids hold no
  // LIKE wildcard), since a claim hands out either. `state IN (...)` repeats the partial index's
  // condition so SQLite reads that index (the active checks) and not every check ever made.
  const ended = `RETURNING *, (EXISTS (SELECT 1 FROM jobs q WHERE q.board = jobs.board AND q.state = 'queued')
    OR EXISTS (SELECT 1 FROM board_health_checks c WHERE c.state IN ('requested', 'running') AND c.state = 'requested' AND (c.board = jobs.board OR c.board LIKE jobs.board || '.%'))) AS board_queued`;
  const finished =
    outcome.state === 'done'
      ? yield* one<EndedRow>(`UPDATE jobs SET state = 'done', finished_at_ms = ?, uart_bytes = ?, uart_json = ?, stop_json = ?, flash_ms = ?, run_ms = ? WHERE ${unfinished} ${ended}`, [
          outcome.nowMs,
          Buffer.from(outcome.uart.bytes),
          uartJson(outcome.uart),
          JSON.stringify(outcome.stop),
          outcome.flashMs,
          outcome.runMs,
          ...who,
        ])
      : yield* one<EndedRow>(`UPDATE jobs SET state = 'failed', finished_at_ms = ?, failure_kind = ?, failure_message = ?, uart_bytes = COALESCE(?, uart_bytes), uart_json = COALESCE(?, uart_json) WHERE ${unfinished} ${ended}`, [
          outcome.nowMs,
          outcome.failure.kind,
          outcome.failure.message,
          // No capture given: the UART saved while it ran stays (a failure wipes nothing the server accepted).
          uart ? Buffer.from(uart.bytes) : null,
          uart ? uartJson(uart) : null,
          ...who,
        ]);
  if (!finished) return undefined;
  yield* renewAfterJob(d, sessionId, outcome.nowMs);
  const job = jobFromRow(finished);
  // Asked before the lease's DELETE: when neither unread input nor the instance's health has a
  // statement to add, the DELETE is the last, and on PostgreSQL its COMMIT goes with it (decision 0980).
  const asked = options.health?.(job);
  const unreadInput = hasUnreadInput(finished);
  yield* run("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = ?", [jobId], { last: !asked && !unreadInput });
  if (unreadInput) yield* run('DELETE FROM job_serial_input WHERE job_id = ?', [jobId]);
  const health = asked && (yield* countHealth(d, job, asked));
  return { job, ended: true, ...(health && { health }), boardQueued: Boolean(Number(finished.board_queued)) };
}

/** A job's row as its end returns it, with whether its board has another job queued (PostgreSQL: a boolean; SQLite: 0 or 1). */
type EndedRow = JobRow & { board_queued: boolean | number };

/**
 * What the service's count made of the end of `job` (`asked`), applied in the transaction that ended it (decision 0930):
 * a lost COMMIT answer, or a process dying after the end, can no longer leave the end recorded and
 * the count not. The debug job's row (decision 0663) is read only when the rule asks for it: a
 * debug job's row is written as its worker claims it, and deleted only after its end.
 */
function* countHealth(d: Dialect, job: JobRecord, asked: HealthChange): Steps<FinishedJob['health']> {
  if (!asked.countsUnderDebugger && job.sessionId !== null && (yield* one('SELECT job_id FROM debug_jobs WHERE job_id = ?', [job.jobId]))) return undefined;
  return { instance: asked.instance, ...(yield* changeHealth(d, asked.instance, asked.change)) };
}

/**
 * Deletes the serial input a job that just ended will never read, if it has any (numbers queued
 * past those acknowledged: decision 0650). Run in the transaction that ended it, with its row
 * locked: input is queued only for a flashing or running job under that lock, so none comes after.
 * A job without input (nearly every one) costs no statement.
 */
export function* dropUnreadInput(ended: Pick<JobRow, 'job_id' | 'serial_next_seq' | 'serial_acked_seq'>): Steps<void> {
  if (hasUnreadInput(ended)) yield* run('DELETE FROM job_serial_input WHERE job_id = ?', [ended.job_id]);
}

/** Whether a job has serial input queued past what its worker acknowledged. */
function hasUnreadInput(row: Pick<JobRow, 'serial_next_seq' | 'serial_acked_seq'>): boolean {
  return Number(row.serial_next_seq) > Number(row.serial_acked_seq);
}
