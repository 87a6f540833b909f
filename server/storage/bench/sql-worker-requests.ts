import type { JobState } from './bench-store.js';
import {
  failedOutcomeJson,
  type HealthCheckOutcomeRecord,
  type HealthCheckRecord,
  type HealthCheckRow,
  type HealthCheckStore,
  healthCheckFromRow,
  type RequestHealthCheckResult,
} from './health-check-store.js';
import { isRevoked } from './job-queue-rules.js';
import { type EnqueueSerialInputResult, type SerialInputStore, type TakeSerialInputResult, withinBytes } from './serial-input-store.js';
import type { SqlExecutor } from './sql/sql-executor.js';
import { all, one, run, type Steps } from '../sql-steps.js';

/**
 * What the server asks of a worker through the store, once for both databases (decision 0545):
 * serial input for its running jobs (decision 0420) and health checks of its boards (decision
 * 0421). Each write is one transaction that locks the job's row first (or takes a check
 * `FOR UPDATE SKIP LOCKED` on PostgreSQL), so an input's number and its job's state are decided
 * once across replicas.
 */

/** The most inputs one `take` reads before cutting at `maxBytes` (a job's queue is small anyway). */
const TAKE_ROWS = 256;

type JobInputRow = { state: JobState; worker_id: string | null; serial_next_seq: number; cancel_reason: string | null };

export class SqlSerialInput implements SerialInputStore {
  constructor(private readonly sql: SqlExecutor) {}

  enqueue(jobId: string, bytes: Uint8Array, options: { nowMs: number; maxPendingBytes: number }): Promise<EnqueueSerialInputResult> {
    const d = this.sql.dialect;
    return this.sql.transaction(function* (): Steps<EnqueueSerialInputResult> {
      const job = yield* one<JobInputRow>(`SELECT state, worker_id, serial_next_seq FROM jobs WHERE job_id = ?${d.forUpdate}`, [jobId]);
      if (!job || job.worker_id === null || (job.state !== 'flashing' && job.state !== 'running')) return { kind: 'not-running', state: job?.state };
      const { pending } = (yield* one<{ pending: number }>('SELECT COALESCE(SUM(LENGTH(bytes)), 0) AS pending FROM job_serial_input WHERE job_id = ?', [jobId]))!;
      if (pending + bytes.length > options.maxPendingBytes) return { kind: 'full', pendingBytes: pending };
      const seq = job.serial_next_seq + 1;
      yield* run('UPDATE jobs SET serial_next_seq = ? WHERE job_id = ?', [seq, jobId]);
      yield* run('INSERT INTO job_serial_input (job_id, seq, bytes, queued_at_ms) VALUES (?, ?, ?, ?)', [jobId, seq, Buffer.from(bytes), options.nowMs]);
      return { kind: 'queued', seq, workerId: job.worker_id };
    });
  }

  async take(jobId: string, request: { workerId: string; writtenThroughSeq: number; maxBytes: number }): Promise<TakeSerialInputResult> {
    // Never past what was queued: a confused worker cannot acknowledge input not yet taken.
    const written = Math.max(0, Math.floor(request.writtenThroughSeq));
    // One statement for a job never sent any input, nearly every job (decision 0720): it checks the
    // holder, acknowledges, and reads the cancel reason the fetch answers with. It was a
    // transaction of four statements and a read of the job on every job's first fetch.
    const held = await this.sql.plain(() =>
      one<{ serial_next_seq: number; cancel_reason: string | null }>(
        `UPDATE jobs SET serial_acked_seq = ${this.sql.dialect.greatest}(serial_acked_seq, CASE WHEN ? < serial_next_seq THEN ? ELSE serial_next_seq END)
         WHERE job_id = ? AND worker_id = ? AND state IN ('flashing', 'running') RETURNING serial_next_seq, cancel_reason`,
        [written, written, jobId, request.workerId],
      ),
    );
    if (!held) return { kind: 'lost' };
    if (Number(held.serial_next_seq) === 0) return { kind: 'held', inputs: [], cancelReason: held.cancel_reason };
    const d = this.sql.dialect;
    return this.sql.transaction(function* (): Steps<TakeSerialInputResult> {
      const job = yield* one<JobInputRow>(`SELECT state, worker_id, serial_next_seq, cancel_reason FROM jobs WHERE job_id = ?${d.forUpdate}`, [jobId]);
      if (!job || job.worker_id !== request.workerId || (job.state !== 'flashing' && job.state !== 'running')) return { kind: 'lost' };
      const acked = Math.min(written, job.serial_next_seq);
      yield* run(`UPDATE jobs SET serial_acked_seq = ${d.greatest}(serial_acked_seq, ?) WHERE job_id = ?`, [acked, jobId]);
      yield* run('DELETE FROM job_serial_input WHERE job_id = ? AND seq <= ?', [jobId, acked]);
      const rows = yield* all<{ seq: number; bytes: Buffer; queued_at_ms: number }>(
        'SELECT seq, bytes, queued_at_ms FROM job_serial_input WHERE job_id = ? AND seq > ? ORDER BY seq LIMIT ?',
        [jobId, acked, TAKE_ROWS],
      );
      return { kind: 'held', inputs: withinBytes(rows, request.maxBytes), cancelReason: job.cancel_reason };
    });
  }

  async writtenThrough(jobId: string): Promise<number> {
    return (await this.sql.plain(() => one<{ serial_acked_seq: number }>('SELECT serial_acked_seq FROM jobs WHERE job_id = ?', [jobId])))?.serial_acked_seq ?? 0;
  }

  purgeEnded(): Promise<number> {
    // Driven from the input (nearly always empty), not from every ended job: the sweep runs it every few seconds.
    return this.sql.plain(() =>
      run("DELETE FROM job_serial_input WHERE EXISTS (SELECT 1 FROM jobs WHERE jobs.job_id = job_serial_input.job_id AND jobs.state IN ('done', 'failed'))"),
    );
  }
}

function* checkById(checkId: string): Steps<HealthCheckRecord | undefined> {
  const row = yield* one<HealthCheckRow>('SELECT * FROM board_health_checks WHERE check_id = ?', [checkId]);
  return row && healthCheckFromRow(row);
}

export class SqlHealthChecks implements HealthCheckStore {
  constructor(private readonly sql: SqlExecutor) {}

  request(r: { checkId: string; board: string; workerId: string; timeoutMs: number; nowMs: number }): Promise<RequestHealthCheckResult> {
    return this.sql.transaction(function* (): Steps<RequestHealthCheckResult> {
      const active = yield* one<HealthCheckRow>("SELECT * FROM board_health_checks WHERE board = ? AND state IN ('requested', 'running')", [r.board]);
      if (active) return { kind: 'already-active', check: healthCheckFromRow(active) };
      const row = yield* one<HealthCheckRow>(
        "INSERT INTO board_health_checks (check_id, board, worker_id, state, requested_at_ms, timeout_ms) VALUES (?, ?, ?, 'requested', ?, ?) RETURNING *",
        [r.checkId, r.board, r.workerId, r.nowMs, r.timeoutMs],
      );
      return { kind: 'requested', check: healthCheckFromRow(row!) };
    });
  }

  async claim(workerId: string, boards: readonly string[], nowMs: number): Promise<HealthCheckRecord | undefined> {
    if (boards.length === 0) return undefined;
    const d = this.sql.dialect;
    const pick = (lock: boolean) => `SELECT check_id FROM board_health_checks WHERE worker_id = ? AND state = 'requested' AND ${d.inList('board')}
         ORDER BY requested_at_ms, ${d.seq} LIMIT 1${lock ? d.forUpdateSkipLocked : ''}`;
    // A worker looks at every wake-up and nearly every look finds nothing: one plain statement answers those.
    if (!(await this.sql.plain(() => one(pick(false), [workerId, d.listParam(boards)])))) return undefined;
    return this.sql.transaction(function* (): Steps<HealthCheckRecord | undefined> {
      const row = yield* one<{ check_id: string }>(pick(true), [workerId, d.listParam(boards)]);
      // A revoked worker's claim (it was waiting in it when revoked) takes nothing.
      if (!row || (yield* isRevoked(workerId))) return undefined;
      const claimed = yield* one<HealthCheckRow>("UPDATE board_health_checks SET state = 'running', started_at_ms = ? WHERE check_id = ? AND state = 'requested' RETURNING *", [
        nowMs,
        row.check_id,
      ]);
      return claimed && healthCheckFromRow(claimed);
    });
  }

  async finish(checkId: string, workerId: string, outcome: HealthCheckOutcomeRecord, nowMs: number): Promise<HealthCheckRecord | undefined> {
    const row = await this.sql.plain(() =>
      one<HealthCheckRow>("UPDATE board_health_checks SET state = 'done', finished_at_ms = ?, outcome_json = ? WHERE check_id = ? AND worker_id = ? AND state = 'running' RETURNING *", [
        nowMs,
        JSON.stringify(outcome),
        checkId,
        workerId,
      ]),
    );
    return row && healthCheckFromRow(row);
  }

  get(checkId: string): Promise<HealthCheckRecord | undefined> {
    return this.sql.plain(() => checkById(checkId));
  }

  async active(): Promise<HealthCheckRecord[]> {
    const seq = this.sql.dialect.seq;
    const rows = await this.sql.plain(() => all<HealthCheckRow>(`SELECT * FROM board_health_checks WHERE state IN ('requested', 'running') ORDER BY requested_at_ms, ${seq}`));
    return rows.map(healthCheckFromRow);
  }

  interrupt(workerId: string, options: { reason: string; nowMs: number }): Promise<HealthCheckRecord[]> {
    return this.failWhere("worker_id = ? AND state = 'running'", [workerId], options);
  }

  failAllOf(workerId: string, options: { reason: string; nowMs: number }): Promise<HealthCheckRecord[]> {
    return this.failWhere("worker_id = ? AND state IN ('requested', 'running')", [workerId], options);
  }

  expire(nowMs: number, options: { graceMs: number; reason: string }): Promise<HealthCheckRecord[]> {
    return this.failWhere("state IN ('requested', 'running') AND requested_at_ms + timeout_ms + ? <= ?", [options.graceMs, nowMs], { reason: options.reason, nowMs });
  }

  /** Ends every check matching `where` as failed with `reason`, in one statement, oldest first. */
  private async failWhere(where: string, params: readonly unknown[], options: { reason: string; nowMs: number }): Promise<HealthCheckRecord[]> {
    const rows = await this.sql.plain(() =>
      all<HealthCheckRow>(`UPDATE board_health_checks SET state = 'done', finished_at_ms = ?, outcome_json = ? WHERE ${where} RETURNING *`, [
        options.nowMs,
        failedOutcomeJson(options.reason),
        ...params,
      ]),
    );
    return rows.map(healthCheckFromRow).sort((a, b) => a.requestedAtMs - b.requestedAtMs);
  }
}
