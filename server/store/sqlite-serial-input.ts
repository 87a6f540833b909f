import type Database from 'better-sqlite3';
import type { JobState } from './bench-store.js';
import { type EnqueueSerialInputResult, type SerialInputStore, type TakeSerialInputResult, withinBytes } from './serial-input-store.js';

/** The most inputs one `take` reads before cutting at `maxBytes` (a job's queue is small anyway). */
const TAKE_ROWS = 256;

/**
 * Serial input of running jobs in the bench store's SQLite database (`SerialInputStore`). Each
 * call is one IMMEDIATE transaction: the job's state is checked and its next number taken together.
 */
export class SqliteSerialInput implements SerialInputStore {
  constructor(private readonly db: Database.Database) {}

  async enqueue(jobId: string, bytes: Uint8Array, options: { nowMs: number; maxPendingBytes: number }): Promise<EnqueueSerialInputResult> {
    const { db } = this;
    return db
      .transaction((): EnqueueSerialInputResult => {
        const job = db.prepare('SELECT state, worker_id, serial_next_seq FROM jobs WHERE job_id = ?').get(jobId) as
          | { state: JobState; worker_id: string | null; serial_next_seq: number }
          | undefined;
        if (!job || job.worker_id === null || (job.state !== 'flashing' && job.state !== 'running')) return { kind: 'not-running', state: job?.state };
        const { pending } = db.prepare('SELECT COALESCE(SUM(LENGTH(bytes)), 0) AS pending FROM job_serial_input WHERE job_id = ?').get(jobId) as { pending: number };
        if (pending + bytes.length > options.maxPendingBytes) return { kind: 'full', pendingBytes: pending };
        const seq = job.serial_next_seq + 1;
        db.prepare('UPDATE jobs SET serial_next_seq = ? WHERE job_id = ?').run(seq, jobId);
        db.prepare('INSERT INTO job_serial_input (job_id, seq, bytes, queued_at_ms) VALUES (?, ?, ?, ?)').run(jobId, seq, Buffer.from(bytes), options.nowMs);
        return { kind: 'queued', seq, workerId: job.worker_id };
      })
      .immediate();
  }

  async take(jobId: string, request: { workerId: string; writtenThroughSeq: number; maxBytes: number }): Promise<TakeSerialInputResult> {
    const { db } = this;
    return db
      .transaction((): TakeSerialInputResult => {
        const job = db.prepare('SELECT state, worker_id, serial_next_seq FROM jobs WHERE job_id = ?').get(jobId) as
          | { state: JobState; worker_id: string | null; serial_next_seq: number }
          | undefined;
        if (!job || job.worker_id !== request.workerId || (job.state !== 'flashing' && job.state !== 'running')) return { kind: 'lost' };
        // Never past what was queued: a confused worker cannot acknowledge input not yet taken.
        const acked = Math.min(Math.max(0, Math.floor(request.writtenThroughSeq)), job.serial_next_seq);
        db.prepare('UPDATE jobs SET serial_acked_seq = MAX(serial_acked_seq, ?) WHERE job_id = ?').run(acked, jobId);
        db.prepare('DELETE FROM job_serial_input WHERE job_id = ? AND seq <= ?').run(jobId, acked);
        const rows = db
          .prepare('SELECT seq, bytes, queued_at_ms FROM job_serial_input WHERE job_id = ? AND seq > ? ORDER BY seq LIMIT ?')
          .all(jobId, acked, TAKE_ROWS) as Array<{ seq: number; bytes: Buffer; queued_at_ms: number }>;
        return { kind: 'held', inputs: withinBytes(rows, request.maxBytes) };
      })
      .immediate();
  }

  async writtenThrough(jobId: string): Promise<number> {
    const row = this.db.prepare('SELECT serial_acked_seq FROM jobs WHERE job_id = ?').get(jobId) as { serial_acked_seq: number } | undefined;
    return row?.serial_acked_seq ?? 0;
  }

  async purgeEnded(): Promise<number> {
    return this.db
      .prepare("DELETE FROM job_serial_input WHERE job_id IN (SELECT job_id FROM jobs WHERE state IN ('done', 'failed'))")
      .run().changes;
  }
}
