import { type CreateJobResult, instanceField, instanceOf, type JobClaimStatus, type JobOutcome, type JobRecord, type JobState, type UartRecord } from '../bench-store.js';
import { type JobRow, jobFromRow, sessionFromRow, uartJson } from '../sqlite-bench-rows.js';
import { lockBoard, type Query } from './pg-database.js';
import { expireDue, firstFree, lockSession, renewAfterJob } from './pg-session-leases.js';

/**
 * Jobs in the PostgreSQL store: create, claim, run, renew, cancel, finish, and the sweeps, with the
 * rules of the SQLite store (sqlite-job-writes.ts, sqlite-job-queue.ts). Every function runs
 * inside `PgDatabase.write`, one short transaction, with no global lock (decision 0515): a job is
 * created under its board's advisory lock (the lease check and the queue limit); a claim takes the
 * head of a board's queue `FOR UPDATE SKIP LOCKED`, and the partial unique index keeps one active
 * job per board; every change of state is an UPDATE whose WHERE names the state it leaves, so the
 * database lets one of two racing writers win. Locks are taken session first, then job, then lease.
 */

async function jobById(q: Query, jobId: string): Promise<JobRecord | undefined> {
  const [row] = await q<JobRow>('SELECT * FROM jobs WHERE job_id = $1', [jobId]);
  return row && jobFromRow(row);
}

export async function createJob(
  q: Query,
  job: JobRecord,
  options: { maxQueuedPerBoard: number; nowMs: number; instances?: readonly string[] },
): Promise<CreateJobResult> {
  // The pool's lock (a board id names a pool, decision 0510): its lease checks and queue limit.
  await lockBoard(q, job.board);
  await expireDue(q, options.nowMs);
  let instance: string;
  if (job.sessionId !== null) {
    // Locked, so a sweep expiring this session waits for the job (and then keeps the session alive).
    const row = await lockSession(q, job.sessionId);
    if (!row || row.agent_id !== job.agentId) return { kind: 'session-not-found' };
    const session = sessionFromRow(row);
    if (session.state !== 'active') return { kind: 'session-not-active', session };
    if (session.board !== job.board) return { kind: 'session-other-board', session };
    // A job in a session runs on the session's instance; one asked for explicitly must be it.
    instance = instanceOf(session);
    if (job.instance !== undefined && job.instance !== instance) return { kind: 'session-other-board', session };
  } else {
    const candidates = job.instance !== undefined || !options.instances?.length ? [instanceOf(job)] : options.instances;
    const pick = await firstFree(q, candidates, options.nowMs);
    if ('lease' in pick) return { kind: 'board-leased', lease: pick.lease };
    instance = pick.free;
  }
  const [{ queued }] = (await q<{ queued: number }>("SELECT COUNT(*) AS queued FROM jobs WHERE board = $1 AND state = 'queued'", [job.board])) as [
    { queued: number },
  ];
  if (queued >= options.maxQueuedPerBoard) return { kind: 'queue-full', queued };
  await q(
    `INSERT INTO jobs (job_id, agent_id, board, session_id, state, firmware_sha256, firmware_size_bytes, elf_json, uart_seconds, created_at_ms, instance)
     VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7, $8, $9, $10)`,
    [job.jobId, job.agentId, job.board, job.sessionId, job.firmware.sha256, job.firmware.sizeBytes, JSON.stringify(job.firmware.elf), job.uartSeconds, job.createdAtMs, instance],
  );
  if (job.sessionId === null) {
    await q("INSERT INTO leases (instance, board, holder_kind, holder_id, agent_id) VALUES ($1, $2, 'job', $3, $4)", [instance, job.board, job.jobId, job.agentId]);
  }
  const { instance: _asked, ...rest } = job;
  return { kind: 'created', job: { ...rest, state: 'queued', ...instanceField(job.board, instance) } };
}

export async function claimJob(
  q: Query,
  request: { workerId: string; boards: readonly string[]; nowMs: number; claimMs: number | null },
): Promise<JobRecord | undefined> {
  if (request.boards.length === 0) return undefined;
  await expireDue(q, request.nowMs);
  if (await isRevoked(q, request.workerId)) return undefined;
  // Only the head of each idle instance's queue is a candidate (FIFO per instance, decision 0510);
  // a head another claimer holds is skipped with its instance, never passed by the job behind it.
  const [row] = await q<{ job_id: string }>(
    `SELECT q.job_id FROM jobs q
     WHERE q.state = 'queued' AND q.instance = ANY($1::text[])
       AND NOT EXISTS (SELECT 1 FROM jobs a WHERE a.instance = q.instance AND a.state IN ('flashing', 'running'))
       AND NOT EXISTS (SELECT 1 FROM jobs o WHERE o.instance = q.instance AND o.state = 'queued' AND (o.created_at_ms, o.seq) < (q.created_at_ms, q.seq))
     ORDER BY q.created_at_ms, q.seq LIMIT 1 FOR UPDATE SKIP LOCKED`,
    [[...request.boards]],
  );
  if (!row) return undefined;
  const expiresAtMs = request.claimMs === null ? null : request.nowMs + request.claimMs;
  const [claimed] = await q<JobRow>(
    "UPDATE jobs SET state = 'flashing', started_at_ms = $1, worker_id = $2, claim_expires_at_ms = $3 WHERE job_id = $4 AND state = 'queued' RETURNING *",
    [request.nowMs, request.workerId, expiresAtMs, row.job_id],
  );
  return claimed && jobFromRow(claimed);
}

/** Whether `workerId` is a bench worker an administrator revoked (a claim it waited in takes nothing; the server's own worker has no row). */
export async function isRevoked(q: Query, workerId: string): Promise<boolean> {
  return (await q('SELECT 1 FROM workers WHERE worker_id = $1 AND revoked_at_ms IS NOT NULL', [workerId])).length > 0;
}

async function claimStatus(q: Query, jobId: string, workerId: string): Promise<JobClaimStatus> {
  const [row] = await q<{ state: JobState; worker_id: string | null; cancel_reason: string | null }>(
    'SELECT state, worker_id, cancel_reason FROM jobs WHERE job_id = $1',
    [jobId],
  );
  if (!row) return { kind: 'lost', state: 'failed' };
  if (row.worker_id !== workerId || (row.state !== 'flashing' && row.state !== 'running')) return { kind: 'lost', state: row.state };
  return { kind: 'held', cancelReason: row.cancel_reason };
}

export async function markJobRunning(q: Query, jobId: string, workerId: string, nowMs: number): Promise<JobClaimStatus> {
  await q("UPDATE jobs SET state = 'running', running_at_ms = $1 WHERE job_id = $2 AND worker_id = $3 AND state = 'flashing'", [nowMs, jobId, workerId]);
  return claimStatus(q, jobId, workerId);
}

export async function renewJobClaim(
  q: Query,
  jobId: string,
  workerId: string,
  renewal: { nowMs: number; claimMs: number | null; uart?: UartRecord },
): Promise<JobClaimStatus> {
  // One conditional UPDATE: a job finished or swept meanwhile keeps its outcome and its UART.
  const claimExpiresAtMs = renewal.claimMs === null ? null : renewal.nowMs + renewal.claimMs;
  const uart = renewal.uart;
  const [held] = await q<{ cancel_reason: string | null }>(
    `UPDATE jobs SET claim_expires_at_ms = $1, uart_bytes = CASE WHEN $2::boolean THEN $3 ELSE uart_bytes END, uart_json = CASE WHEN $2::boolean THEN $4 ELSE uart_json END
     WHERE job_id = $5 AND worker_id = $6 AND state IN ('flashing', 'running') RETURNING cancel_reason`,
    [claimExpiresAtMs, uart !== undefined, uart ? Buffer.from(uart.bytes) : null, uart ? uartJson(uart) : null, jobId, workerId],
  );
  return held ? { kind: 'held', cancelReason: held.cancel_reason } : claimStatus(q, jobId, workerId);
}

export async function requestJobCancel(q: Query, jobId: string, reason: string, nowMs: number): Promise<JobRecord | undefined> {
  const cancelled = await q(
    "UPDATE jobs SET state = 'failed', failure_kind = 'cancelled', failure_message = $1, finished_at_ms = $2 WHERE job_id = $3 AND state = 'queued' RETURNING job_id",
    [`cancelled before it started: ${reason}`, nowMs, jobId],
  );
  if (cancelled.length > 0) await q("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = $1", [jobId]);
  await q("UPDATE jobs SET cancel_reason = $1 WHERE job_id = $2 AND state IN ('flashing', 'running') AND cancel_reason IS NULL", [reason, jobId]);
  return jobById(q, jobId);
}

/**
 * Fails `row` as interrupted unless it changed since it was read (`stillSql`, a condition on the
 * job's columns, is checked again under the row lock): a job fails once, whoever sweeps.
 */
async function interrupt(q: Query, row: JobRow, failure: { message: string; nowMs: number; stillSql: string; params: readonly unknown[] }): Promise<JobRecord | undefined> {
  if (row.session_id !== null) await lockSession(q, row.session_id);
  const [failed] = await q<JobRow>(
    `UPDATE jobs SET state = 'failed', failure_kind = 'interrupted', failure_message = $1, finished_at_ms = $2
     WHERE job_id = $3 AND state IN ('flashing', 'running') AND ${failure.stillSql} RETURNING *`,
    [failure.message, failure.nowMs, row.job_id, ...failure.params],
  );
  if (!failed) return undefined;
  await q("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = $1", [row.job_id]);
  await renewAfterJob(q, row.session_id, failure.nowMs);
  return jobFromRow(failed);
}

/** Lapsing claims on flashing or running jobs moved to at least `untilMs`; how many moved. */
export async function extendClaims(q: Query, untilMs: number): Promise<number> {
  const moved = await q<{ job_id: string }>(
    `UPDATE jobs SET claim_expires_at_ms = $1 WHERE state IN ('flashing', 'running') AND claim_expires_at_ms IS NOT NULL AND claim_expires_at_ms < $1
     RETURNING job_id`,
    [untilMs],
  );
  return moved.length;
}

export async function failLapsedClaims(q: Query, nowMs: number): Promise<JobRecord[]> {
  const lapsed = await q<JobRow>(
    `SELECT * FROM jobs WHERE state IN ('flashing', 'running') AND claim_expires_at_ms IS NOT NULL AND claim_expires_at_ms <= $1
     ORDER BY created_at_ms, seq`,
    [nowMs],
  );
  const failed: JobRecord[] = [];
  for (const row of lapsed) {
    const job = await interrupt(q, row, {
      message: `worker ${row.worker_id ?? '?'} stopped answering while this job was ${row.state} (its claim lapsed); the UART it reported is kept; submit the job again`,
      nowMs,
      stillSql: 'claim_expires_at_ms IS NOT NULL AND claim_expires_at_ms <= $4',
      params: [nowMs],
    });
    if (job) failed.push(job);
  }
  return failed;
}

export async function releaseWorkerJobs(q: Query, workerId: string, release: { reason: string; nowMs: number; keep?: readonly string[] }): Promise<JobRecord[]> {
  const keep = new Set(release.keep ?? []);
  const held = await q<JobRow>("SELECT * FROM jobs WHERE worker_id = $1 AND state IN ('flashing', 'running') ORDER BY created_at_ms, seq", [workerId]);
  const released: JobRecord[] = [];
  for (const row of held.filter((r) => !keep.has(r.job_id))) {
    const job = await interrupt(q, row, { message: `${release.reason} while this job was ${row.state}; submit it again`, nowMs: release.nowMs, stillSql: 'worker_id = $4', params: [workerId] });
    if (job) released.push(job);
  }
  return released;
}

export async function finishJob(q: Query, jobId: string, outcome: JobOutcome, options: { workerId?: string } = {}): Promise<JobRecord> {
  const [before] = await q<{ session_id: string | null }>('SELECT session_id FROM jobs WHERE job_id = $1', [jobId]);
  if (!before) throw new Error(`job ${jobId} not found`);
  if (before.session_id !== null) await lockSession(q, before.session_id);
  // The first outcome wins, and with `workerId` only the claim's holder may write one: both are
  // conditions of the UPDATE, checked again under the row lock.
  const unfinished = `job_id = $1 AND state NOT IN ('done', 'failed') AND ($2::text IS NULL OR worker_id = $2)`;
  const uart = outcome.uart ?? null;
  const changed =
    outcome.state === 'done'
      ? await q(
          `UPDATE jobs SET state = 'done', finished_at_ms = $3, uart_bytes = $4, uart_json = $5, stop_json = $6, flash_ms = $7, run_ms = $8 WHERE ${unfinished} RETURNING job_id`,
          [jobId, options.workerId ?? null, outcome.nowMs, Buffer.from(outcome.uart.bytes), uartJson(outcome.uart), JSON.stringify(outcome.stop), outcome.flashMs, outcome.runMs],
        )
      : await q(
          `UPDATE jobs SET state = 'failed', finished_at_ms = $3, failure_kind = $4, failure_message = $5, uart_bytes = $6, uart_json = $7 WHERE ${unfinished} RETURNING job_id`,
          [jobId, options.workerId ?? null, outcome.nowMs, outcome.failure.kind, outcome.failure.message, uart ? Buffer.from(uart.bytes) : null, uart ? uartJson(uart) : null],
        );
  if (changed.length === 1) {
    await renewAfterJob(q, before.session_id, outcome.nowMs);
    await q("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = $1", [jobId]);
  }
  return (await jobById(q, jobId))!;
}

export async function failOverdueQueuedJobs(q: Query, createdAtOrBeforeMs: number, failure: { reason: string; nowMs: number }): Promise<JobRecord[]> {
  const overdue = await q<JobRow>("SELECT * FROM jobs WHERE state = 'queued' AND created_at_ms <= $1 ORDER BY created_at_ms, seq", [createdAtOrBeforeMs]);
  const failed: JobRecord[] = [];
  for (const row of overdue) {
    if (row.session_id !== null) await lockSession(q, row.session_id);
    const [job] = await q<JobRow>(
      "UPDATE jobs SET state = 'failed', failure_kind = 'unavailable', failure_message = $1, finished_at_ms = $2 WHERE job_id = $3 AND state = 'queued' RETURNING *",
      [failure.reason, failure.nowMs, row.job_id],
    );
    if (!job) continue;
    await q("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = $1", [row.job_id]);
    await renewAfterJob(q, row.session_id, failure.nowMs);
    failed.push(jobFromRow(job));
  }
  return failed;
}
