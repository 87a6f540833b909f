import type { JobClaimStatus, JobRecord, JobState, UartRecord } from './bench-store.js';
import { type JobRow, jobFromRow, uartJson } from './bench-rows.js';
import { dropUnreadInput } from './job-rules.js';
import { lockSession, renewAfterJob } from './session-lease-rules.js';
import type { Dialect } from './sql/dialect.js';
import { all, one, run, type Steps } from '../sql-steps.js';

/**
 * The job queue, once for both databases (decision 0545): workers claim queued jobs, mark them
 * running, renew their claims (saving UART), and jobs whose worker vanished are failed. Each runs
 * inside one write transaction; the partial unique index keeps one flashing or running job per
 * instance whatever the dialect.
 */

/**
 * The oldest queued job on one of `boards` (instance ids, decision 0510) whose instance is idle,
 * moved to `flashing` for the worker; nothing for a revoked worker (a claim it was already waiting
 * in when revoked, on any replica). One statement, so it needs no transaction: the pick is a
 * subquery of the UPDATE, locked and skipping rows another claimer holds on PostgreSQL, and the
 * UPDATE checks the job is still queued. Only the head of each idle instance's queue is a
 * candidate (FIFO per instance): on PostgreSQL a head another claimer holds is skipped with its
 * instance, never passed by the job behind it (on SQLite, one writer at a time, the oldest
 * candidate is a head); the partial unique index backs up one active job per instance.
 *
 * An instance under an administrator's health check, requested or running (decision 0606), is
 * skipped: its job waits for the check to end. Checked here, in the same statement, rather than
 * by a read of the active checks before every claim (decision 0801).
 *
 * No expiry sweep first: a session with a queued job never expires (decision 0211), so expiring
 * due sessions cannot change what a claim may take.
 */
export function* claimJob(d: Dialect, request: { workerId: string; boards: readonly string[]; nowMs: number; claimMs: number | null }): Steps<JobRecord | undefined> {
  if (request.boards.length === 0) return undefined;
  const expiresAtMs = request.claimMs === null ? null : request.nowMs + request.claimMs;
  const claimed = yield* one<JobRow>(
    `UPDATE jobs SET state = 'flashing', started_at_ms = ?, worker_id = ?, claim_expires_at_ms = ?
     WHERE job_id = (${claimableSql(d)}) AND state = 'queued'
       AND NOT EXISTS (SELECT 1 FROM workers w WHERE w.worker_id = ? AND w.revoked_at_ms IS NOT NULL)
     RETURNING *`,
    [request.nowMs, request.workerId, expiresAtMs, d.listParam(request.boards), request.workerId],
  );
  return claimed && jobFromRow(claimed);
}

/**
 * PostgreSQL's claim of a worker's next task (decision 0860): `claimJob`'s UPDATE as a data-changing
 * CTE, answering in the same statement whether a health check is requested of the worker on one of
 * `checkBoards`. An empty look, about one a job (the claim right after the previous job ended), was
 * two statements: the claim and a look for a check. One row always: the job's columns (null when
 * none was claimed) and `check_waiting`. SQLite has no UPDATE in a WITH; its statements cost no
 * round trip, so it asks twice.
 */
export function* claimJobSeeingChecks(d: Dialect, request: { workerId: string; boards: readonly string[]; checkBoards: readonly string[]; nowMs: number; claimMs: number | null }): Steps<{ job?: JobRecord; checkWaiting: boolean }> {
  const expiresAtMs = request.claimMs === null ? null : request.nowMs + request.claimMs;
  const row = yield* one<JobRow & { check_waiting: boolean | number }>(
    `WITH claimed AS (
       UPDATE jobs SET state = 'flashing', started_at_ms = ?, worker_id = ?, claim_expires_at_ms = ?
       WHERE job_id = (${claimableSql(d)}) AND state = 'queued'
         AND NOT EXISTS (SELECT 1 FROM workers w WHERE w.worker_id = ? AND w.revoked_at_ms IS NOT NULL)
       RETURNING *)
     SELECT claimed.*, EXISTS (SELECT 1 FROM board_health_checks c WHERE c.worker_id = ? AND c.state = 'requested' AND ${d.inList('c.board')}) AS check_waiting
     FROM (SELECT 1 AS one) AS one LEFT JOIN claimed ON true`,
    [request.nowMs, request.workerId, expiresAtMs, d.listParam(request.boards), request.workerId, request.workerId, d.listParam(request.checkBoards)],
  );
  const checkWaiting = Boolean(row?.check_waiting);
  return row && row.job_id !== null ? { job: jobFromRow(row), checkWaiting } : { checkWaiting };
}

/** The oldest claimable job on the instances bound as one list parameter, locked (skipping held rows) where the dialect locks rows. */
function claimableSql(d: Dialect): string {
  const headOnly =
    d.name === 'postgres'
      ? "AND NOT EXISTS (SELECT 1 FROM jobs o WHERE o.instance = q.instance AND o.state = 'queued' AND (o.created_at_ms, o.seq) < (q.created_at_ms, q.seq))"
      : '';
  return `SELECT q.job_id FROM jobs q
     WHERE q.state = 'queued' AND ${d.inList('q.instance')}
       AND NOT EXISTS (SELECT 1 FROM jobs a WHERE a.instance = q.instance AND a.state IN ('flashing', 'running'))
       AND NOT EXISTS (SELECT 1 FROM board_health_checks c WHERE c.board = q.instance AND c.state IN ('requested', 'running')) ${headOnly}
     ORDER BY q.created_at_ms, q.${d.seq} LIMIT 1${d.forUpdateSkipLocked}`;
}

/** Whether `workerId` is a bench worker an administrator revoked (the server's own worker has no row). */
export function* isRevoked(workerId: string): Steps<boolean> {
  return (yield* one('SELECT 1 AS one FROM workers WHERE worker_id = ? AND revoked_at_ms IS NOT NULL', [workerId])) !== undefined;
}

function* claimStatus(jobId: string, workerId: string): Steps<JobClaimStatus> {
  const row = yield* one<{ state: JobState; worker_id: string | null; cancel_reason: string | null }>('SELECT state, worker_id, cancel_reason FROM jobs WHERE job_id = ?', [jobId]);
  if (!row) return { kind: 'lost', state: 'failed' };
  if (row.worker_id !== workerId || (row.state !== 'flashing' && row.state !== 'running')) return { kind: 'lost', state: row.state };
  return { kind: 'held', cancelReason: row.cancel_reason };
}

/** flashing → running for the worker holding the job. One statement: it needs no transaction. */
export function* markJobRunning(jobId: string, workerId: string, nowMs: number): Steps<JobClaimStatus> {
  const held = yield* one<{ cancel_reason: string | null; serial_next_seq: number }>(
    "UPDATE jobs SET state = 'running', running_at_ms = ? WHERE job_id = ? AND worker_id = ? AND state = 'flashing' RETURNING cancel_reason, serial_next_seq",
    [nowMs, jobId, workerId],
  );
  // Whether input was ever queued: a job never sent any has nothing for its worker's first fetch (decision 0980).
  return held ? { kind: 'held', cancelReason: held.cancel_reason, inputSent: Number(held.serial_next_seq) > 0 } : yield* claimStatus(jobId, workerId);
}

/**
 * Extends the worker's claim and saves the UART so far; says whether the job was asked to stop.
 * One conditional UPDATE: a job finished or swept meanwhile keeps its outcome and its UART.
 */
export function* renewJobClaim(jobId: string, workerId: string, renewal: { nowMs: number; claimMs: number | null; uart?: UartRecord }): Steps<JobClaimStatus> {
  const claimExpiresAtMs = renewal.claimMs === null ? null : renewal.nowMs + renewal.claimMs;
  const { uart } = renewal;
  const held = uart
    ? yield* one<{ cancel_reason: string | null }>(
        "UPDATE jobs SET claim_expires_at_ms = ?, uart_bytes = ?, uart_json = ? WHERE job_id = ? AND worker_id = ? AND state IN ('flashing', 'running') RETURNING cancel_reason",
        [claimExpiresAtMs, Buffer.from(uart.bytes), uartJson(uart), jobId, workerId],
      )
    : yield* one<{ cancel_reason: string | null }>(
        "UPDATE jobs SET claim_expires_at_ms = ? WHERE job_id = ? AND worker_id = ? AND state IN ('flashing', 'running') RETURNING cancel_reason",
        [claimExpiresAtMs, jobId, workerId],
      );
  return held ? { kind: 'held', cancelReason: held.cancel_reason } : yield* claimStatus(jobId, workerId);
}

/**
 * Fails `row` as interrupted unless it changed since it was read (`still`, a condition on the
 * job's columns, is checked again by the UPDATE): a job fails once, whoever sweeps. Keeps the UART
 * saved while it ran, frees its lease and renews its session (the job ended now: the session's
 * idle time starts now, not when the worker went silent). A debug job's row goes with it (decision
 * 0810): no outcome will come through the relay to forget it.
 */
function* interrupt(d: Dialect, row: JobRow, failure: { message: string; nowMs: number; still: string; params: readonly unknown[] }): Steps<JobRecord | undefined> {
  if (row.session_id !== null) yield* lockSession(d, row.session_id);
  const failed = yield* one<JobRow>(
    `UPDATE jobs SET state = 'failed', failure_kind = 'interrupted', failure_message = ?, finished_at_ms = ?
     WHERE job_id = ? AND state IN ('flashing', 'running') AND ${failure.still} RETURNING *`,
    [failure.message, failure.nowMs, row.job_id, ...failure.params],
  );
  if (!failed) return undefined;
  yield* run("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = ?", [row.job_id]);
  yield* dropUnreadInput(failed);
  // Only a job in a session can be a debug job (its session was armed).
  if (row.session_id !== null) yield* run('DELETE FROM debug_jobs WHERE job_id = ?', [row.job_id]);
  yield* renewAfterJob(d, row.session_id, failure.nowMs);
  return jobFromRow(failed);
}

/** Lapsing claims on flashing or running jobs moved to at least `untilMs`; how many moved. */
export function* extendClaims(untilMs: number): Steps<number> {
  return yield* run(
    "UPDATE jobs SET claim_expires_at_ms = ? WHERE state IN ('flashing', 'running') AND claim_expires_at_ms IS NOT NULL AND claim_expires_at_ms < ?",
    [untilMs, untilMs],
  );
}

/** Jobs whose worker stopped renewing its claim: failed as interrupted. */
export function* failLapsedClaims(d: Dialect, nowMs: number): Steps<JobRecord[]> {
  const lapsed = yield* all<JobRow>(
    `SELECT * FROM jobs WHERE state IN ('flashing', 'running') AND claim_expires_at_ms IS NOT NULL AND claim_expires_at_ms <= ?
     ORDER BY created_at_ms, ${d.seq}`,
    [nowMs],
  );
  const failed: JobRecord[] = [];
  for (const row of lapsed) {
    const job = yield* interrupt(d, row, {
      message: `worker ${row.worker_id ?? '?'} stopped answering while this job was ${row.state} (its claim lapsed); the UART it reported is kept; submit the job again`,
      nowMs,
      still: 'claim_expires_at_ms IS NOT NULL AND claim_expires_at_ms <= ?',
      params: [nowMs],
    });
    if (job) failed.push(job);
  }
  return failed;
}

/** The worker's flashing or running jobs, except `keep`, failed as interrupted with `reason`. */
export function* releaseWorkerJobs(d: Dialect, workerId: string, release: { reason: string; nowMs: number; keep?: readonly string[] }): Steps<JobRecord[]> {
  const keep = new Set(release.keep ?? []);
  const held = yield* all<JobRow>(`SELECT * FROM jobs WHERE worker_id = ? AND state IN ('flashing', 'running') ORDER BY created_at_ms, ${d.seq}`, [workerId]);
  const released: JobRecord[] = [];
  for (const row of held.filter((r) => !keep.has(r.job_id))) {
    const job = yield* interrupt(d, row, { message: `${release.reason} while this job was ${row.state}; submit it again`, nowMs: release.nowMs, still: 'worker_id = ?', params: [workerId] });
    if (job) released.push(job);
  }
  return released;
}

/** Queued jobs created at or before the cutoff: failed as unavailable (no worker started them in time). */
export function* failOverdueQueuedJobs(d: Dialect, createdAtOrBeforeMs: number, failure: { reason: string; nowMs: number }): Steps<JobRecord[]> {
  const overdue = yield* all<JobRow>(`SELECT * FROM jobs WHERE state = 'queued' AND created_at_ms <= ? ORDER BY created_at_ms, ${d.seq}`, [createdAtOrBeforeMs]);
  const failed: JobRecord[] = [];
  for (const row of overdue) {
    if (row.session_id !== null) yield* lockSession(d, row.session_id);
    const job = yield* one<JobRow>(
      "UPDATE jobs SET state = 'failed', failure_kind = 'unavailable', failure_message = ?, finished_at_ms = ? WHERE job_id = ? AND state = 'queued' RETURNING *",
      [failure.reason, failure.nowMs, row.job_id],
    );
    if (!job) continue;
    yield* run("DELETE FROM leases WHERE holder_kind = 'job' AND holder_id = ?", [row.job_id]);
    yield* renewAfterJob(d, row.session_id, failure.nowMs);
    failed.push(jobFromRow(job));
  }
  return failed;
}
