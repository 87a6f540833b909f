import type { CreateJobResult, JobClaimStatus, JobOutcome, JobRecord, JobState, UartRecord } from '../bench-store.js';
import { type JobRow, type SessionRow, jobFromRow, sessionFromRow, uartJson } from '../sqlite-bench-rows.js';
import type { Query } from './pg-database.js';
import { expireDue, leaseOn, renewAfterJob } from './pg-session-leases.js';

/**
 * Jobs in the PostgreSQL store: create, claim, run, renew, cancel, finish, and the sweeps, with the
 * rules of the SQLite store (sqlite-job-writes.ts, sqlite-job-queue.ts). Every function runs
 * inside `PgDatabase.write` (one writer at a time across replicas); the claim also takes its row
 * with `FOR UPDATE SKIP LOCKED` and the partial unique index keeps one active job per board.
 */

async function jobById(q: Query, jobId: string): Promise<JobRecord | undefined> {
  const [row] = await q<JobRow>('SELECT * FROM jobs WHERE job_id = $1', [jobId]);
  return row && jobFromRow(row);
}

export async function createJob(q: Query, job: JobRecord, options: { maxQueuedPerBoard: number; nowMs: number }): Promise<CreateJobResult> {
  await expireDue(q, options.nowMs);
  if (job.sessionId !== null) {
    const [row] = await q<SessionRow>('SELECT * FROM sessions WHERE session_id = $1', [job.sessionId]);
    if (!row || row.agent_id !== job.agentId) return { kind: 'session-not-found' };
    const session = sessionFromRow(row);
    if (session.state !== 'active') return { kind: 'session-not-active', session };
    if (session.board !== job.board) return { kind: 'session-other-board', session };
  } else {
    const lease = await leaseOn(q, job.board, options.nowMs);
    if (lease) return { kind: 'board-leased', lease };
  }
  const [{ queued }] = (await q<{ queued: number }>("SELECT COUNT(*) AS queued FROM jobs WHERE board = $1 AND state = 'queued'", [job.board])) as [
    { queued: number },
  ];
  if (queued >= options.maxQueuedPerBoard) return { kind: 'queue-full', queued };
  await q(
    `INSERT INTO jobs (job_id, agent_id, board, session_id, state, firmware_sha256, firmware_size_bytes, elf_json, uart_seconds, created_at_ms)
     VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7, $8, $9)`,
    [job.jobId, job.agentId, job.board, job.sessionId, job.firmware.sha256, job.firmware.sizeBytes, JSON.stringify(job.firmware.elf), job.uartSeconds, job.createdAtMs],
  );
  if (job.sessionId === null) {
    await q("INSERT INTO leases (board, holder_kind, holder_id, agent_id) VALUES ($1, 'job', $2, $3)", [job.board, job.jobId, job.agentId]);
  }
  return { kind: 'created', job: { ...job, state: 'queued' } };
}

export async function claimJob(
  q: Query,
  request: { workerId: string; boards: readonly string[]; nowMs: number; claimMs: number | null },
): Promise<JobRecord | undefined> {
  if (request.boards.length === 0) return undefined;
  await expireDue(q, request.nowMs);
  if (await isRevoked(q, request.workerId)) return undefined;
  const [row] = await q<{ job_id: string }>(
    `SELECT q.job_id FROM jobs q
     WHERE q.state = 'queued' AND q.board = ANY($1::text[])
       AND NOT EXISTS (SELECT 1 FROM jobs a WHERE a.board = q.board AND a.state IN ('flashing', 'running'))
     ORDER BY q.created_at_ms, q.seq LIMIT 1 FOR UPDATE SKIP LOCKED`,
    [[...request.boards]],
  );
  if (!row) return undefined;
  const expiresAtMs = request.claimMs === null ? null : request.nowMs + request.claimMs;
  await q("UPDATE jobs SET state = 'flashing', started_at_ms = $1, worker_id = $2, claim_expires_at_ms = $3 WHERE job_id = $4 AND state = 'queued'", [
    request.nowMs,
    request.workerId,
    expiresAtMs,
    row.job_id,
  ]);
  return jobById(q, row.job_id);
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
  const status = await claimStatus(q, jobId, workerId);
  if (status.kind === 'lost') return status;
  await q('UPDATE jobs SET claim_expires_at_ms = $1 WHERE job_id = $2', [renewal.claimMs === null ? null : renewal.nowMs + renewal.claimMs, jobId]);
  if (renewal.uart) await q('UPDATE jobs SET uart_bytes = $1, uart_json = $2 WHERE job_id = $3', [Buffer.from(renewal.uart.bytes), uartJson(renewal.uart), jobId]);
  return status;
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

async function interrupt(q: Query, row: JobRow, message: string, nowMs: number): Promise<JobRecord> {
  await q("UPDATE jobs SET state = 'failed', failure_kind = 'interrupted', failure_message = $1, finished_at_ms = $2 WHERE job_id = $3", [message, nowMs, row.job_id]);
  await q("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = $1", [row.job_id]);
  await renewAfterJob(q, row.session_id, nowMs);
  return (await jobById(q, row.job_id))!;
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
    failed.push(
      await interrupt(
        q,
        row,
        `worker ${row.worker_id ?? '?'} stopped answering while this job was ${row.state} (its claim lapsed); the UART it reported is kept; submit the job again`,
        nowMs,
      ),
    );
  }
  return failed;
}

export async function releaseWorkerJobs(q: Query, workerId: string, release: { reason: string; nowMs: number; keep?: readonly string[] }): Promise<JobRecord[]> {
  const keep = new Set(release.keep ?? []);
  const held = await q<JobRow>("SELECT * FROM jobs WHERE worker_id = $1 AND state IN ('flashing', 'running') ORDER BY created_at_ms, seq", [workerId]);
  const released: JobRecord[] = [];
  for (const row of held.filter((r) => !keep.has(r.job_id))) {
    released.push(await interrupt(q, row, `${release.reason} while this job was ${row.state}; submit it again`, release.nowMs));
  }
  return released;
}

export async function finishJob(q: Query, jobId: string, outcome: JobOutcome, options: { workerId?: string } = {}): Promise<JobRecord> {
  const [before] = await q<{ state: JobState; session_id: string | null; worker_id: string | null }>('SELECT state, session_id, worker_id FROM jobs WHERE job_id = $1', [jobId]);
  const notTheWorkers = options.workerId !== undefined && before?.worker_id !== options.workerId;
  if (!before) throw new Error(`job ${jobId} not found`);
  if (before.state === 'done' || before.state === 'failed' || notTheWorkers) return (await jobById(q, jobId))!;
  const uart = outcome.uart ?? null;
  if (outcome.state === 'done') {
    await q('UPDATE jobs SET state = $1, finished_at_ms = $2, uart_bytes = $3, uart_json = $4, stop_json = $5, flash_ms = $6, run_ms = $7 WHERE job_id = $8', [
      'done',
      outcome.nowMs,
      Buffer.from(outcome.uart.bytes),
      uartJson(outcome.uart),
      JSON.stringify(outcome.stop),
      outcome.flashMs,
      outcome.runMs,
      jobId,
    ]);
  } else {
    await q("UPDATE jobs SET state = 'failed', finished_at_ms = $1, failure_kind = $2, failure_message = $3, uart_bytes = $4, uart_json = $5 WHERE job_id = $6", [
      outcome.nowMs,
      outcome.failure.kind,
      outcome.failure.message,
      uart ? Buffer.from(uart.bytes) : null,
      uart ? uartJson(uart) : null,
      jobId,
    ]);
  }
  await renewAfterJob(q, before.session_id, outcome.nowMs);
  await q("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = $1", [jobId]);
  return (await jobById(q, jobId))!;
}

export async function failOverdueQueuedJobs(q: Query, createdAtOrBeforeMs: number, failure: { reason: string; nowMs: number }): Promise<JobRecord[]> {
  const overdue = await q<JobRow>("SELECT * FROM jobs WHERE state = 'queued' AND created_at_ms <= $1 ORDER BY created_at_ms, seq", [createdAtOrBeforeMs]);
  const failed: JobRecord[] = [];
  for (const row of overdue) {
    await q("UPDATE jobs SET state = 'failed', failure_kind = 'unavailable', failure_message = $1, finished_at_ms = $2 WHERE job_id = $3", [failure.reason, failure.nowMs, row.job_id]);
    await q("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = $1", [row.job_id]);
    await renewAfterJob(q, row.session_id, failure.nowMs);
    failed.push((await jobById(q, row.job_id))!);
  }
  return failed;
}
