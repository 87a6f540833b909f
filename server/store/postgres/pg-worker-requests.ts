import type { JobState } from '../bench-store.js';
import {
  type HealthCheckOutcomeRecord,
  failedOutcomeJson,
  type HealthCheckRecord,
  type HealthCheckRow,
  type HealthCheckStore,
  healthCheckFromRow,
  type RequestHealthCheckResult,
} from '../health-check-store.js';
import { type EnqueueSerialInputResult, type SerialInputStore, type TakeSerialInputResult, withinBytes } from '../serial-input-store.js';
import type { PgDatabase, Query } from './pg-database.js';
import { isRevoked } from './pg-jobs.js';

/**
 * What the server asks of a worker through the PostgreSQL store: serial input for its running jobs
 * and health checks of its boards, with the rules of the SQLite store (sqlite-serial-input.ts,
 * sqlite-health-checks.ts). Each write is one transaction that locks the job's row first (or
 * takes a check `FOR UPDATE SKIP LOCKED`), so an input's number and its job's state are decided once
 * across replicas (decision 0515).
 */

type JobInputRow = { state: JobState; worker_id: string | null; serial_next_seq: number };

export class PgSerialInput implements SerialInputStore {
  constructor(private readonly db: PgDatabase) {}

  enqueue(jobId: string, bytes: Uint8Array, options: { nowMs: number; maxPendingBytes: number }): Promise<EnqueueSerialInputResult> {
    return this.db.write(async (q): Promise<EnqueueSerialInputResult> => {
      const [job] = await q<JobInputRow>('SELECT state, worker_id, serial_next_seq FROM jobs WHERE job_id = $1 FOR UPDATE', [jobId]);
      if (!job || job.worker_id === null || (job.state !== 'flashing' && job.state !== 'running')) return { kind: 'not-running', state: job?.state };
      const [{ pending }] = (await q<{ pending: number }>('SELECT COALESCE(SUM(LENGTH(bytes)), 0) AS pending FROM job_serial_input WHERE job_id = $1', [jobId])) as [
        { pending: number },
      ];
      if (pending + bytes.length > options.maxPendingBytes) return { kind: 'full', pendingBytes: pending };
      const seq = job.serial_next_seq + 1;
      await q('UPDATE jobs SET serial_next_seq = $1 WHERE job_id = $2', [seq, jobId]);
      await q('INSERT INTO job_serial_input (job_id, seq, bytes, queued_at_ms) VALUES ($1, $2, $3, $4)', [jobId, seq, Buffer.from(bytes), options.nowMs]);
      return { kind: 'queued', seq, workerId: job.worker_id };
    });
  }

  take(jobId: string, request: { workerId: string; writtenThroughSeq: number; maxBytes: number }): Promise<TakeSerialInputResult> {
    return this.db.write(async (q): Promise<TakeSerialInputResult> => {
      const [job] = await q<JobInputRow>('SELECT state, worker_id, serial_next_seq FROM jobs WHERE job_id = $1 FOR UPDATE', [jobId]);
      if (!job || job.worker_id !== request.workerId || (job.state !== 'flashing' && job.state !== 'running')) return { kind: 'lost' };
      const acked = Math.min(Math.max(0, Math.floor(request.writtenThroughSeq)), job.serial_next_seq);
      await q('UPDATE jobs SET serial_acked_seq = GREATEST(serial_acked_seq, $1) WHERE job_id = $2', [acked, jobId]);
      await q('DELETE FROM job_serial_input WHERE job_id = $1 AND seq <= $2', [jobId, acked]);
      const rows = await q<{ seq: number; bytes: Buffer; queued_at_ms: number }>(
        'SELECT seq, bytes, queued_at_ms FROM job_serial_input WHERE job_id = $1 AND seq > $2 ORDER BY seq LIMIT 256',
        [jobId, acked],
      );
      return { kind: 'held', inputs: withinBytes(rows, request.maxBytes) };
    });
  }

  async writtenThrough(jobId: string): Promise<number> {
    const [row] = await this.db.query<{ serial_acked_seq: number }>('SELECT serial_acked_seq FROM jobs WHERE job_id = $1', [jobId]);
    return row?.serial_acked_seq ?? 0;
  }

  async purgeEnded(): Promise<number> {
    const rows = await this.db.write((q) =>
      q("DELETE FROM job_serial_input WHERE job_id IN (SELECT job_id FROM jobs WHERE state IN ('done', 'failed')) RETURNING seq"),
    );
    return rows.length;
  }
}

async function checkById(q: Query, checkId: string): Promise<HealthCheckRecord | undefined> {
  const [row] = await q<HealthCheckRow>('SELECT * FROM board_health_checks WHERE check_id = $1', [checkId]);
  return row && healthCheckFromRow(row);
}

export class PgHealthChecks implements HealthCheckStore {
  constructor(private readonly db: PgDatabase) {}

  request(r: { checkId: string; board: string; workerId: string; timeoutMs: number; nowMs: number }): Promise<RequestHealthCheckResult> {
    return this.db.write(async (q): Promise<RequestHealthCheckResult> => {
      const [active] = await q<HealthCheckRow>("SELECT * FROM board_health_checks WHERE board = $1 AND state IN ('requested', 'running')", [r.board]);
      if (active) return { kind: 'already-active', check: healthCheckFromRow(active) };
      await q("INSERT INTO board_health_checks (check_id, board, worker_id, state, requested_at_ms, timeout_ms) VALUES ($1, $2, $3, 'requested', $4, $5)", [
        r.checkId,
        r.board,
        r.workerId,
        r.nowMs,
        r.timeoutMs,
      ]);
      return { kind: 'requested', check: (await checkById(q, r.checkId))! };
    });
  }

  claim(workerId: string, boards: readonly string[], nowMs: number): Promise<HealthCheckRecord | undefined> {
    if (boards.length === 0) return Promise.resolve(undefined);
    return this.db.write(async (q) => {
      const [row] = await q<{ check_id: string }>(
        `SELECT check_id FROM board_health_checks WHERE worker_id = $1 AND state = 'requested' AND board = ANY($2::text[])
         ORDER BY requested_at_ms, seq LIMIT 1 FOR UPDATE SKIP LOCKED`,
        [workerId, [...boards]],
      );
      // A revoked worker's claim (it was waiting in it when revoked) takes nothing.
      if (!row || (await isRevoked(q, workerId))) return undefined;
      await q("UPDATE board_health_checks SET state = 'running', started_at_ms = $1 WHERE check_id = $2 AND state = 'requested'", [nowMs, row.check_id]);
      return checkById(q, row.check_id);
    });
  }

  finish(checkId: string, workerId: string, outcome: HealthCheckOutcomeRecord, nowMs: number): Promise<HealthCheckRecord | undefined> {
    return this.db.write(async (q) => {
      const changed = await q(
        "UPDATE board_health_checks SET state = 'done', finished_at_ms = $1, outcome_json = $2 WHERE check_id = $3 AND worker_id = $4 AND state = 'running' RETURNING check_id",
        [nowMs, JSON.stringify(outcome), checkId, workerId],
      );
      return changed.length === 1 ? checkById(q, checkId) : undefined;
    });
  }

  get(checkId: string): Promise<HealthCheckRecord | undefined> {
    return checkById(this.db.query, checkId);
  }

  async active(): Promise<HealthCheckRecord[]> {
    const rows = await this.db.query<HealthCheckRow>("SELECT * FROM board_health_checks WHERE state IN ('requested', 'running') ORDER BY requested_at_ms, seq");
    return rows.map(healthCheckFromRow);
  }

  interrupt(workerId: string, options: { reason: string; nowMs: number }): Promise<HealthCheckRecord[]> {
    const outcome = failedOutcomeJson(options.reason);
    return this.db.write(async (q) => {
      const rows = await q<HealthCheckRow>(
        "UPDATE board_health_checks SET state = 'done', finished_at_ms = $1, outcome_json = $2 WHERE worker_id = $3 AND state = 'running' RETURNING *",
        [options.nowMs, outcome, workerId],
      );
      return rows.map(healthCheckFromRow);
    });
  }

  failAllOf(workerId: string, options: { reason: string; nowMs: number }): Promise<HealthCheckRecord[]> {
    const outcome = failedOutcomeJson(options.reason);
    return this.db.write(async (q) => {
      const rows = await q<HealthCheckRow>(
        "UPDATE board_health_checks SET state = 'done', finished_at_ms = $1, outcome_json = $2 WHERE worker_id = $3 AND state IN ('requested', 'running') RETURNING *",
        [options.nowMs, outcome, workerId],
      );
      return rows.map(healthCheckFromRow).sort((a, b) => a.requestedAtMs - b.requestedAtMs);
    });
  }

  expire(nowMs: number, options: { graceMs: number; reason: string }): Promise<HealthCheckRecord[]> {
    const outcome = failedOutcomeJson(options.reason);
    return this.db.write(async (q) => {
      const rows = await q<HealthCheckRow>(
        `UPDATE board_health_checks SET state = 'done', finished_at_ms = $1, outcome_json = $2
         WHERE state IN ('requested', 'running') AND requested_at_ms + timeout_ms + $3 <= $1 RETURNING *`,
        [nowMs, outcome, options.graceMs],
      );
      return rows.map(healthCheckFromRow);
    });
  }
}
