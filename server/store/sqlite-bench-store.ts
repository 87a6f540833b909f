import Database from 'better-sqlite3';
import type {
  AgentRecord,
  BenchStore,
  CreateJobResult,
  JobClaimStatus,
  JobOutcome,
  JobRecord,
  JobState,
  JobWithAgent,
  LeaseWithAgent,
  OpenSessionResult,
  SessionChangeResult,
  SessionRecord,
  SessionWithAgent,
  StoreCounts,
  UartRecord,
} from './bench-store.js';
import { instanceField, instanceOf, jobStates } from './bench-store.js';
import { latestVersion } from '../db/run-migrations.js';
import { prepareOwnerOnlyDatabase } from '../lifecycle/private-files.js';
import { benchStoreMigrations, migrateBenchDatabase } from './bench-store-migrations.js';
import { SqliteHealthChecks } from './sqlite-health-checks.js';
import { SqliteQuarantineStore } from './sqlite-quarantine-store.js';
import { SqliteSerialInput } from './sqlite-serial-input.js';
import { SqliteWaitlist } from './sqlite-waitlist.js';
import { SqliteWorkerRegistry } from './sqlite-worker-registry.js';
import { SqliteSessionQueue } from './sqlite-session-queue.js';
import { type AgentRow, type JobRow, type SessionRow, agentFromRow, insertSession, jobFromRow, sessionFromRow } from './sqlite-bench-rows.js';
import { claimJob, extendClaims, failLapsedClaims, failOverdueQueuedJobs, markJobRunning, releaseWorkerJobs, renewJobClaim, requestJobCancel } from './sqlite-job-queue.js';
import { createJob, finishJob } from './sqlite-job-writes.js';
import { asOf, closeSession, expireDue, firstFree, inUse, listLeasesAsOf } from './sqlite-session-leases.js';

/** The schema version this code writes; a database from a newer version is refused. */
export const SQLITE_SCHEMA_VERSION = latestVersion(benchStoreMigrations);

/**
 * The bench store on SQLite (better-sqlite3, WAL). One process owns the file. The session and
 * lease rules live in `sqlite-session-leases.ts`, jobs in `sqlite-job-writes.ts` and the queue in `sqlite-job-queue.ts`,
 * the row mapping in `sqlite-bench-rows.ts`; this class is their one public face.
 */
export class SqliteBenchStore implements BenchStore {
  /** The open database. For this class and its tests only: the service sees `BenchStore`. */
  readonly database: Database.Database;
  readonly boardHealth: SqliteQuarantineStore;
  readonly healthChecks: SqliteHealthChecks;
  readonly serialInput: SqliteSerialInput;
  readonly waitlist: SqliteWaitlist;
  readonly workers: SqliteWorkerRegistry;
  readonly sessionQueue: SqliteSessionQueue;

  constructor(file: string) {
    // Agents' token hashes and e-mails, the CSRF secret: 0600, and SQLite gives -wal/-shm the same mode.
    prepareOwnerOnlyDatabase(file);
    this.database = new Database(file);
    this.database.pragma('journal_mode = WAL');
    // FULL: a commit is on disk before the response that reports it is sent.
    this.database.pragma('synchronous = FULL');
    this.database.pragma('foreign_keys = ON');
    this.database.pragma('busy_timeout = 5000');
    migrateBenchDatabase(this.database);
    this.boardHealth = new SqliteQuarantineStore(this.database);
    this.healthChecks = new SqliteHealthChecks(this.database);
    this.serialInput = new SqliteSerialInput(this.database);
    this.waitlist = new SqliteWaitlist(this.database);
    this.workers = new SqliteWorkerRegistry(this.database);
    this.sessionQueue = new SqliteSessionQueue(this.database);
  }

  async ping(): Promise<void> {
    this.database.prepare('SELECT 1').get();
  }

  async insertAgent(agent: AgentRecord): Promise<void> {
    this.database
      .prepare('INSERT INTO agents (agent_id, label, token_sha256, created_at_ms) VALUES (?, ?, ?, ?)')
      .run(agent.agentId, agent.label, agent.tokenSha256, agent.createdAtMs);
  }

  async getAgent(agentId: string): Promise<AgentRecord | undefined> {
    const row = this.database.prepare('SELECT * FROM agents WHERE agent_id = ?').get(agentId) as AgentRow | undefined;
    return row && agentFromRow(row);
  }

  async findAgentByTokenSha256(tokenSha256: string): Promise<AgentRecord | undefined> {
    const row = this.database.prepare('SELECT * FROM agents WHERE token_sha256 = ?').get(tokenSha256) as AgentRow | undefined;
    return row && agentFromRow(row);
  }

  async expireSessions(nowMs: number): Promise<SessionRecord[]> {
    return this.database.transaction(() => expireDue(this.database, nowMs)).immediate();
  }

  async openSession(session: SessionRecord, options: { instances?: readonly string[] } = {}): Promise<OpenSessionResult> {
    const db = this.database;
    const candidates = session.instance !== undefined || !options.instances?.length ? [instanceOf(session)] : options.instances;
    // IMMEDIATE takes the write lock first, so the check and the insert are one step for every
    // writer of this file (other connections included), not only for this process.
    return db
      .transaction((): OpenSessionResult => {
        expireDue(db, session.createdAtMs);
        const pick = firstFree(db, candidates, session.createdAtMs);
        if ('lease' in pick) return { kind: 'board-leased', lease: pick.lease };
        const { instance: _asked, ...rest } = session;
        const opened: SessionRecord = { ...rest, ...instanceField(session.board, pick.free) };
        insertSession(db, opened);
        db.prepare("INSERT INTO leases (instance, board, holder_kind, holder_id, agent_id) VALUES (?, ?, 'session', ?, ?)").run(
          pick.free,
          session.board,
          session.sessionId,
          session.agentId,
        );
        return { kind: 'opened', session: opened };
      })
      .immediate();
  }

  async getSession(sessionId: string, nowMs: number): Promise<SessionRecord | undefined> {
    // A plain read: a session due at `nowMs` is shown expired, the sweep (`expireSessions`) records it.
    const row = this.database.prepare('SELECT * FROM sessions WHERE session_id = ?').get(sessionId) as SessionRow | undefined;
    return row && asOf(this.database, sessionFromRow(row), nowMs);
  }

  private changeSession(sessionId: string, nowMs: number, change: (s: SessionRecord) => void): SessionChangeResult {
    return this.database
      .transaction((): SessionChangeResult => {
        expireDue(this.database, nowMs);
        const row = this.database.prepare('SELECT * FROM sessions WHERE session_id = ?').get(sessionId) as SessionRow | undefined;
        if (!row) return { kind: 'not-found' };
        const session = sessionFromRow(row);
        if (session.state !== 'active') return { kind: 'not-active', session };
        change(session);
        const fresh = this.database.prepare('SELECT * FROM sessions WHERE session_id = ?').get(sessionId) as SessionRow;
        return { kind: 'changed', session: inUse(this.database, sessionFromRow(fresh), nowMs) };
      })
      .immediate();
  }

  async heartbeatSession(sessionId: string, nowMs: number): Promise<SessionChangeResult> {
    return this.changeSession(sessionId, nowMs, (s) => {
      this.database
        .prepare('UPDATE sessions SET expires_at_ms = ?, last_heartbeat_at_ms = ? WHERE session_id = ?')
        .run(nowMs + Math.round(s.idleSeconds * 1000), nowMs, sessionId);
    });
  }

  async endSession(sessionId: string, nowMs: number): Promise<SessionChangeResult> {
    return this.changeSession(sessionId, nowMs, () => {
      this.database.prepare("UPDATE sessions SET state = 'ended', ended_at_ms = ? WHERE session_id = ?").run(nowMs, sessionId);
      closeSession(this.database, sessionId, 'ended', nowMs);
    });
  }

  async listActiveSessions(nowMs: number): Promise<SessionWithAgent[]> {
    const rows = this.database
      .prepare(
        `SELECT s.*, a.label AS agent_label FROM sessions s JOIN agents a ON a.agent_id = s.agent_id
         WHERE s.state = 'active' ORDER BY s.created_at_ms, s.rowid`,
      )
      .all() as Array<SessionRow & { agent_label: string }>;
    return rows
      .map((r) => ({ ...asOf(this.database, sessionFromRow(r), nowMs), agentLabel: r.agent_label }))
      .filter((s) => s.state === 'active');
  }

  async createJob(job: JobRecord, options: { maxQueuedPerBoard: number; nowMs: number; instances?: readonly string[] }): Promise<CreateJobResult> {
    return createJob(this.database, job, options);
  }

  async getJob(jobId: string): Promise<JobRecord | undefined> {
    const row = this.database.prepare('SELECT * FROM jobs WHERE job_id = ?').get(jobId) as JobRow | undefined;
    return row && jobFromRow(row);
  }

  async claimJob(request: { workerId: string; boards: readonly string[]; nowMs: number; claimMs: number | null }): Promise<JobRecord | undefined> {
    return claimJob(this.database, request);
  }

  async markJobRunning(jobId: string, workerId: string, nowMs: number): Promise<JobClaimStatus> {
    return markJobRunning(this.database, jobId, workerId, nowMs);
  }

  async renewJobClaim(jobId: string, workerId: string, renewal: { nowMs: number; claimMs: number | null; uart?: UartRecord }): Promise<JobClaimStatus> {
    return renewJobClaim(this.database, jobId, workerId, renewal);
  }

  async requestJobCancel(jobId: string, reason: string, nowMs: number): Promise<JobRecord | undefined> {
    return requestJobCancel(this.database, jobId, reason, nowMs);
  }

  async failLapsedClaims(nowMs: number): Promise<JobRecord[]> {
    return failLapsedClaims(this.database, nowMs);
  }

  async extendClaims(untilMs: number): Promise<number> {
    return extendClaims(this.database, untilMs);
  }

  async failOverdueQueuedJobs(createdAtOrBeforeMs: number, failure: { reason: string; nowMs: number }): Promise<JobRecord[]> {
    return failOverdueQueuedJobs(this.database, createdAtOrBeforeMs, failure);
  }

  async releaseWorkerJobs(workerId: string, release: { reason: string; nowMs: number; keep?: readonly string[] }): Promise<JobRecord[]> {
    return releaseWorkerJobs(this.database, workerId, release);
  }

  async finishJob(jobId: string, outcome: JobOutcome, options?: { workerId?: string }): Promise<JobRecord> {
    return finishJob(this.database, jobId, outcome, options);
  }

  async listLeases(nowMs: number): Promise<LeaseWithAgent[]> {
    return listLeasesAsOf(this.database, nowMs);
  }

  async boardActivity(): Promise<Map<string, { queued: number; active: number }>> {
    const rows = this.database
      .prepare(
        `SELECT board, SUM(state = 'queued') AS queued, SUM(state IN ('flashing', 'running')) AS active
         FROM jobs WHERE state IN ('queued', 'flashing', 'running') GROUP BY board`,
      )
      .all() as Array<{ board: string; queued: number; active: number }>;
    return new Map(rows.map((r) => [r.board, { queued: r.queued, active: r.active }]));
  }

  async instanceActivity(): Promise<Map<string, { queued: number; active: number }>> {
    const rows = this.database
      .prepare(
        `SELECT instance, SUM(state = 'queued') AS queued, SUM(state IN ('flashing', 'running')) AS active
         FROM jobs WHERE state IN ('queued', 'flashing', 'running') GROUP BY instance`,
      )
      .all() as Array<{ instance: string; queued: number; active: number }>;
    return new Map(rows.map((r) => [r.instance, { queued: r.queued, active: r.active }]));
  }

  async counts(nowMs?: number): Promise<StoreCounts> {
    const db = this.database;
    const agents = (db.prepare('SELECT COUNT(*) AS n FROM agents').get() as { n: number }).n;
    const sessionsOpen =
      nowMs === undefined
        ? (db.prepare("SELECT COUNT(*) AS n FROM sessions WHERE state = 'active'").get() as { n: number }).n
        : (await this.listActiveSessions(nowMs)).length;
    const byState = db.prepare('SELECT state, COUNT(*) AS n FROM jobs GROUP BY state').all() as Array<{ state: JobState; n: number }>;
    const jobsByState = Object.fromEntries(jobStates.map((s) => [s, 0])) as Record<JobState, number>;
    let jobsTotal = 0;
    for (const r of byState) {
      jobsByState[r.state] = r.n;
      jobsTotal += r.n;
    }
    return { agents, sessionsOpen, jobsTotal, jobsByState };
  }

  async recentJobs(limit: number): Promise<JobWithAgent[]> {
    return this.jobsWithAgent('', limit);
  }

  async recentFailures(limit: number): Promise<JobWithAgent[]> {
    return this.jobsWithAgent("WHERE j.state = 'failed'", limit);
  }

  private jobsWithAgent(where: string, limit: number): JobWithAgent[] {
    const rows = this.database
      .prepare(
        `SELECT j.*, a.label AS agent_label FROM jobs j JOIN agents a ON a.agent_id = j.agent_id ${where}
         ORDER BY j.created_at_ms DESC, j.rowid DESC LIMIT ?`,
      )
      .all(limit) as Array<JobRow & { agent_label: string }>;
    return rows.map((r) => ({ ...jobFromRow(r), agentLabel: r.agent_label }));
  }

  async secret(name: string, create: () => Uint8Array): Promise<Uint8Array> {
    const db = this.database;
    return db
      .transaction(() => {
        const row = db.prepare('SELECT value FROM secrets WHERE name = ?').get(name) as { value: Buffer } | undefined;
        if (row) return new Uint8Array(row.value);
        const value = create();
        db.prepare('INSERT INTO secrets (name, value) VALUES (?, ?)').run(name, Buffer.from(value));
        return value;
      })
      .immediate();
  }

  async close(): Promise<void> {
    if (this.database.open) this.database.close();
  }
}
