import { one, run } from '../sql-steps.js';
import { lockSession } from './session-lease-rules.js';
import type { SqlExecutor } from './sql/sql-executor.js';

/** The terms a debug job runs under (host ms): how long it waits for a debugger, and the most its deadline stretches. */
export interface DebugTermsRecord {
  idleTimeoutMs: number;
  maxDebugMs: number;
}

/** A debug job as the store knows it: whose it is, which worker runs it, and the replica that serves its streams. */
export interface DebugJobRecord {
  jobId: string;
  agentId: string;
  workerId: string;
  terms: DebugTermsRecord;
  /** The address other replicas reach the replica that handed the job out at; null when it has none. */
  replicaUrl: string | null;
}

/**
 * Debugging in the database every replica shares (issue 32, decision 0663): a session armed for
 * debugging, and the debug job its next job became when a worker claimed it, with the replica
 * holding the job's GDB streams. Whichever replica hands the job out hands it as a debug job, and
 * any replica can find where to forward a debugger's upgrade (or the worker's leg).
 *
 * Rows go in the transactions that end what they belong to: an unused arming when its session
 * ends or expires (`closeSession`), a debug job when a sweep fails it (`interrupt`, for a lapsed
 * claim or a released worker) or when its outcome is recorded (`forgetJob`, by the relay).
 */
export interface DebugArmingStore {
  /**
   * Arms `sessionId` (the agent's) for debugging: its next claimed job runs under a debugger.
   * Arming again replaces the terms. False, and nothing armed, when the session is not the
   * agent's active one (it ended meanwhile: its end drops armings, so none may come after it).
   */
  arm(sessionId: string, agentId: string, terms: DebugTermsRecord, nowMs: number): Promise<boolean>;
  /**
   * The job was claimed by `workerId` through the replica at `replicaUrl`: when its session was
   * armed by its agent, the arming is used up (in the same transaction) and the job recorded as a
   * debug job; its terms then, else undefined.
   */
  claim(job: { jobId: string; sessionId: string; agentId: string }, workerId: string, replicaUrl: string | null, nowMs: number): Promise<DebugTermsRecord | undefined>;
  /** The debug job `jobId`, if it is one. */
  job(jobId: string): Promise<DebugJobRecord | undefined>;
  /** The debug job ended: it is forgotten; false when `jobId` was no debug job. */
  forgetJob(jobId: string): Promise<boolean>;
}

/** The two tables, the same text for SQLite and PostgreSQL (BIGINT is an integer in both). */
export const DEBUG_ARMING_MIGRATION = `
  CREATE TABLE debug_armings (
    session_id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    idle_timeout_ms BIGINT NOT NULL,
    max_debug_ms BIGINT NOT NULL,
    armed_at_ms BIGINT NOT NULL
  );
  CREATE TABLE debug_jobs (
    job_id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    worker_id TEXT NOT NULL,
    idle_timeout_ms BIGINT NOT NULL,
    max_debug_ms BIGINT NOT NULL,
    replica_url TEXT,
    claimed_at_ms BIGINT NOT NULL
  );
`;

interface TermsRow {
  idle_timeout_ms: number | string;
  max_debug_ms: number | string;
}

interface DebugJobRow extends TermsRow {
  job_id: string;
  agent_id: string;
  worker_id: string;
  replica_url: string | null;
}

/** `DebugArmingStore` on either database (decision 0545's executors). */
export class SqlDebugArmings implements DebugArmingStore {
  constructor(private readonly sql: SqlExecutor) {}

  async arm(sessionId: string, agentId: string, terms: DebugTermsRecord, nowMs: number): Promise<boolean> {
    const d = this.sql.dialect;
    return this.sql.transaction(function* () {
      // The session's lock first, as every writer of a session takes it: an end or expiry
      // (which deletes the arming) either comes before and is seen here, or waits for this one.
      const session = yield* lockSession(d, sessionId);
      if (session?.state !== 'active' || session.agent_id !== agentId) return false;
      yield* run(
        `INSERT INTO debug_armings (session_id, agent_id, idle_timeout_ms, max_debug_ms, armed_at_ms) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (session_id) DO UPDATE SET agent_id = excluded.agent_id, idle_timeout_ms = excluded.idle_timeout_ms,
           max_debug_ms = excluded.max_debug_ms, armed_at_ms = excluded.armed_at_ms`,
        [sessionId, agentId, terms.idleTimeoutMs, terms.maxDebugMs, nowMs],
      );
      return true;
    });
  }

  async claim(job: { jobId: string; sessionId: string; agentId: string }, workerId: string, replicaUrl: string | null, nowMs: number): Promise<DebugTermsRecord | undefined> {
    return this.sql.transaction(function* () {
      // DELETE ... RETURNING takes the arming once: two replicas claiming at once cannot both use it.
      const row = yield* one<TermsRow>('DELETE FROM debug_armings WHERE session_id = ? AND agent_id = ? RETURNING idle_timeout_ms, max_debug_ms', [job.sessionId, job.agentId]);
      if (!row) return undefined;
      const terms = termsOf(row);
      yield* run(
        `INSERT INTO debug_jobs (job_id, agent_id, worker_id, idle_timeout_ms, max_debug_ms, replica_url, claimed_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (job_id) DO UPDATE SET worker_id = excluded.worker_id, replica_url = excluded.replica_url, claimed_at_ms = excluded.claimed_at_ms`,
        [job.jobId, job.agentId, workerId, terms.idleTimeoutMs, terms.maxDebugMs, replicaUrl, nowMs],
      );
      return terms;
    });
  }

  async job(jobId: string): Promise<DebugJobRecord | undefined> {
    const row = await this.sql.plain(() => one<DebugJobRow>('SELECT job_id, agent_id, worker_id, idle_timeout_ms, max_debug_ms, replica_url FROM debug_jobs WHERE job_id = ?', [jobId]));
    return row && { jobId: row.job_id, agentId: row.agent_id, workerId: row.worker_id, terms: termsOf(row), replicaUrl: row.replica_url };
  }

  async forgetJob(jobId: string): Promise<boolean> {
    return (await this.sql.plain(() => run('DELETE FROM debug_jobs WHERE job_id = ?', [jobId]))) > 0;
  }
}

/** PostgreSQL answers BIGINT as a string. */
function termsOf(row: TermsRow): DebugTermsRecord {
  return { idleTimeoutMs: Number(row.idle_timeout_ms), maxDebugMs: Number(row.max_debug_ms) };
}
