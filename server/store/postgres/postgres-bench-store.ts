import type { Clock } from '../../../core/clock.js';
import { jobStates } from '../../../wire/job-states.js';
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
} from '../bench-store.js';
import { instanceField, instanceOf } from '../bench-store.js';
import { type AgentRow, type JobRow, type SessionRow, agentFromRow, jobFromRow, sessionFromRow } from '../sqlite-bench-rows.js';
import { lockBoard, PgDatabase, type Query } from './pg-database.js';
import * as jobs from './pg-jobs.js';
import { migratePgBenchDatabase } from './pg-migrations.js';
import { asOf, closeSession, expireDue, firstFree, inUse, idleMs, listLeasesAsOf, lockSession } from './pg-session-leases.js';
import { PgBoardHealthStore, PgFirmwareBlobs, PgWaitlist, PgWorkerRegistry } from './pg-side-stores.js';
import { PgHealthChecks, PgSerialInput } from './pg-worker-requests.js';
import { PgSessionQueue } from './pg-session-queue.js';

/**
 * The bench store on PostgreSQL, for server replicas (issue 10, decision 0353): every replica
 * opens one on the same database; the rules are those of the SQLite store, and the same contract
 * suite runs on both (test/contract/postgres-bench-store.contract.test.ts). There is no global
 * write lock (decision 0515): row locks, unique indexes and per-board advisory locks decide a
 * lease, a claim or a session's expiry once across replicas, and writes on different boards run
 * at once.
 */
export class PostgresBenchStore implements BenchStore {
  readonly boardHealth: PgBoardHealthStore;
  readonly healthChecks: PgHealthChecks;
  readonly serialInput: PgSerialInput;
  readonly waitlist: PgWaitlist;
  readonly workers: PgWorkerRegistry;
  readonly sessionQueue: PgSessionQueue;
  /** Firmware in the database, shared by every replica (the service uses it instead of files). */
  readonly firmware: PgFirmwareBlobs;

  private constructor(
    private readonly db: PgDatabase,
    clock?: Clock,
  ) {
    this.boardHealth = new PgBoardHealthStore(db);
    this.healthChecks = new PgHealthChecks(db);
    this.serialInput = new PgSerialInput(db);
    this.waitlist = new PgWaitlist(db);
    this.workers = new PgWorkerRegistry(db);
    this.sessionQueue = new PgSessionQueue(db, clock);
    this.firmware = new PgFirmwareBlobs(db);
  }

  /** Connects and brings the schema up to date (replicas starting together take turns). */
  static async open(databaseUrl: string, options: { poolSize?: number; clock?: Clock } = {}): Promise<PostgresBenchStore> {
    const db = new PgDatabase(databaseUrl, options);
    try {
      await migratePgBenchDatabase(db);
    } catch (err) {
      await db.close();
      throw err;
    }
    return new PostgresBenchStore(db, options.clock);
  }

  private get q(): Query {
    return this.db.query;
  }

  async ping(): Promise<void> {
    await this.q('SELECT 1');
  }

  async insertAgent(agent: AgentRecord): Promise<void> {
    await this.q('INSERT INTO agents (agent_id, label, token_sha256, created_at_ms) VALUES ($1, $2, $3, $4)', [agent.agentId, agent.label, agent.tokenSha256, agent.createdAtMs]);
  }

  async getAgent(agentId: string): Promise<AgentRecord | undefined> {
    const [row] = await this.q<AgentRow>('SELECT * FROM agents WHERE agent_id = $1', [agentId]);
    return row && agentFromRow(row);
  }

  async findAgentByTokenSha256(tokenSha256: string): Promise<AgentRecord | undefined> {
    const [row] = await this.q<AgentRow>('SELECT * FROM agents WHERE token_sha256 = $1', [tokenSha256]);
    return row && agentFromRow(row);
  }

  expireSessions(nowMs: number): Promise<SessionRecord[]> {
    return this.db.write((q) => expireDue(q, nowMs));
  }

  openSession(session: SessionRecord, options: { instances?: readonly string[] } = {}): Promise<OpenSessionResult> {
    const candidates = session.instance !== undefined || !options.instances?.length ? [instanceOf(session)] : options.instances;
    return this.db.write(async (q): Promise<OpenSessionResult> => {
      // The pool's lock (a board id names a pool, decision 0510): its instances' lease checks.
      await lockBoard(q, session.board);
      await expireDue(q, session.createdAtMs);
      const pick = await firstFree(q, candidates, session.createdAtMs);
      if ('lease' in pick) return { kind: 'board-leased', lease: pick.lease };
      const { instance: _asked, ...rest } = session;
      const opened: SessionRecord = { ...rest, ...instanceField(session.board, pick.free) };
      await q(
        `INSERT INTO sessions (session_id, agent_id, board, state, idle_seconds, created_at_ms, expires_at_ms, ended_at_ms, last_heartbeat_at_ms, instance)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [session.sessionId, session.agentId, session.board, session.state, session.idleSeconds, session.createdAtMs, session.expiresAtMs, session.endedAtMs, session.lastHeartbeatAtMs, pick.free],
      );
      await q("INSERT INTO leases (instance, board, holder_kind, holder_id, agent_id) VALUES ($1, $2, 'session', $3, $4)", [pick.free, session.board, session.sessionId, session.agentId]);
      return { kind: 'opened', session: opened };
    });
  }

  async getSession(sessionId: string, nowMs: number): Promise<SessionRecord | undefined> {
    const [row] = await this.q<SessionRow>('SELECT * FROM sessions WHERE session_id = $1', [sessionId]);
    return row && asOf(this.q, sessionFromRow(row), nowMs);
  }

  private changeSession(sessionId: string, nowMs: number, change: (q: Query, s: SessionRecord) => Promise<void>): Promise<SessionChangeResult> {
    return this.db.write(async (q): Promise<SessionChangeResult> => {
      await expireDue(q, nowMs);
      const row = await lockSession(q, sessionId);
      if (!row) return { kind: 'not-found' };
      const session = sessionFromRow(row);
      if (session.state !== 'active') return { kind: 'not-active', session };
      await change(q, session);
      const [fresh] = (await q<SessionRow>('SELECT * FROM sessions WHERE session_id = $1', [sessionId])) as [SessionRow];
      return { kind: 'changed', session: await inUse(q, sessionFromRow(fresh), nowMs) };
    });
  }

  heartbeatSession(sessionId: string, nowMs: number): Promise<SessionChangeResult> {
    return this.changeSession(sessionId, nowMs, async (q, s) => {
      await q('UPDATE sessions SET expires_at_ms = $1, last_heartbeat_at_ms = $2 WHERE session_id = $3', [nowMs + idleMs(s.idleSeconds), nowMs, sessionId]);
    });
  }

  endSession(sessionId: string, nowMs: number): Promise<SessionChangeResult> {
    return this.changeSession(sessionId, nowMs, async (q) => {
      await q("UPDATE sessions SET state = 'ended', ended_at_ms = $1 WHERE session_id = $2", [nowMs, sessionId]);
      await closeSession(q, sessionId, 'ended', nowMs);
    });
  }

  async listActiveSessions(nowMs: number): Promise<SessionWithAgent[]> {
    const rows = await this.q<SessionRow & { agent_label: string }>(
      `SELECT s.*, a.label AS agent_label FROM sessions s JOIN agents a ON a.agent_id = s.agent_id
       WHERE s.state = 'active' ORDER BY s.created_at_ms, s.seq`,
    );
    const seen = await Promise.all(rows.map(async (r) => ({ ...(await asOf(this.q, sessionFromRow(r), nowMs)), agentLabel: r.agent_label })));
    return seen.filter((s) => s.state === 'active');
  }

  createJob(job: JobRecord, options: { maxQueuedPerBoard: number; nowMs: number }): Promise<CreateJobResult> {
    return this.db.write((q) => jobs.createJob(q, job, options));
  }

  async getJob(jobId: string): Promise<JobRecord | undefined> {
    const [row] = await this.q<JobRow>('SELECT * FROM jobs WHERE job_id = $1', [jobId]);
    return row && jobFromRow(row);
  }

  claimJob(request: { workerId: string; boards: readonly string[]; nowMs: number; claimMs: number | null }): Promise<JobRecord | undefined> {
    if (request.boards.length === 0) return Promise.resolve(undefined);
    return this.db.write((q) => jobs.claimJob(q, request));
  }

  markJobRunning(jobId: string, workerId: string, nowMs: number): Promise<JobClaimStatus> {
    return this.db.write((q) => jobs.markJobRunning(q, jobId, workerId, nowMs));
  }

  renewJobClaim(jobId: string, workerId: string, renewal: { nowMs: number; claimMs: number | null; uart?: UartRecord }): Promise<JobClaimStatus> {
    return this.db.write((q) => jobs.renewJobClaim(q, jobId, workerId, renewal));
  }

  requestJobCancel(jobId: string, reason: string, nowMs: number): Promise<JobRecord | undefined> {
    return this.db.write((q) => jobs.requestJobCancel(q, jobId, reason, nowMs));
  }

  failLapsedClaims(nowMs: number): Promise<JobRecord[]> {
    return this.db.write((q) => jobs.failLapsedClaims(q, nowMs));
  }

  extendClaims(untilMs: number): Promise<number> {
    return this.db.write((q) => jobs.extendClaims(q, untilMs));
  }

  failOverdueQueuedJobs(createdAtOrBeforeMs: number, failure: { reason: string; nowMs: number }): Promise<JobRecord[]> {
    return this.db.write((q) => jobs.failOverdueQueuedJobs(q, createdAtOrBeforeMs, failure));
  }

  releaseWorkerJobs(workerId: string, release: { reason: string; nowMs: number; keep?: readonly string[] }): Promise<JobRecord[]> {
    return this.db.write((q) => jobs.releaseWorkerJobs(q, workerId, release));
  }

  finishJob(jobId: string, outcome: JobOutcome, options?: { workerId?: string }): Promise<JobRecord> {
    return this.db.write((q) => jobs.finishJob(q, jobId, outcome, options));
  }

  listLeases(nowMs: number): Promise<LeaseWithAgent[]> {
    return listLeasesAsOf(this.q, nowMs);
  }

  async boardActivity(): Promise<Map<string, { queued: number; active: number }>> {
    const rows = await this.q<{ board: string; queued: number; active: number }>(
      `SELECT board, COUNT(*) FILTER (WHERE state = 'queued') AS queued, COUNT(*) FILTER (WHERE state IN ('flashing', 'running')) AS active
       FROM jobs WHERE state IN ('queued', 'flashing', 'running') GROUP BY board`,
    );
    return new Map(rows.map((r) => [r.board, { queued: r.queued, active: r.active }]));
  }

  async instanceActivity(): Promise<Map<string, { queued: number; active: number }>> {
    const rows = await this.q<{ instance: string; queued: number; active: number }>(
      `SELECT instance, COUNT(*) FILTER (WHERE state = 'queued') AS queued, COUNT(*) FILTER (WHERE state IN ('flashing', 'running')) AS active
       FROM jobs WHERE state IN ('queued', 'flashing', 'running') GROUP BY instance`,
    );
    return new Map(rows.map((r) => [r.instance, { queued: r.queued, active: r.active }]));
  }

  async counts(nowMs?: number): Promise<StoreCounts> {
    const [{ n: agents }] = (await this.q<{ n: number }>('SELECT COUNT(*) AS n FROM agents')) as [{ n: number }];
    const sessionsOpen =
      nowMs === undefined
        ? ((await this.q<{ n: number }>("SELECT COUNT(*) AS n FROM sessions WHERE state = 'active'"))[0]?.n ?? 0)
        : (await this.listActiveSessions(nowMs)).length;
    const byState = await this.q<{ state: JobState; n: number }>('SELECT state, COUNT(*) AS n FROM jobs GROUP BY state');
    const jobsByState = Object.fromEntries(jobStates.map((s) => [s, 0])) as Record<JobState, number>;
    let jobsTotal = 0;
    for (const r of byState) {
      jobsByState[r.state] = r.n;
      jobsTotal += r.n;
    }
    return { agents, sessionsOpen, jobsTotal, jobsByState };
  }

  recentJobs(limit: number): Promise<JobWithAgent[]> {
    return this.jobsWithAgent('', limit);
  }

  recentFailures(limit: number): Promise<JobWithAgent[]> {
    return this.jobsWithAgent("WHERE j.state = 'failed'", limit);
  }

  private async jobsWithAgent(where: string, limit: number): Promise<JobWithAgent[]> {
    const rows = await this.q<JobRow & { agent_label: string }>(
      `SELECT j.*, a.label AS agent_label FROM jobs j JOIN agents a ON a.agent_id = j.agent_id ${where}
       ORDER BY j.created_at_ms DESC, j.seq DESC LIMIT $1`,
      [limit],
    );
    return rows.map((r) => ({ ...jobFromRow(r), agentLabel: r.agent_label }));
  }

  secret(name: string, create: () => Uint8Array): Promise<Uint8Array> {
    return this.db.write(async (q) => {
      const [row] = await q<{ value: Buffer }>('SELECT value FROM secrets WHERE name = $1', [name]);
      if (row) return new Uint8Array(row.value);
      // Two replicas starting at once may both create one: the first insert wins, and both answer its value.
      await q('INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [name, Buffer.from(create())]);
      const [stored] = (await q<{ value: Buffer }>('SELECT value FROM secrets WHERE name = $1', [name])) as [{ value: Buffer }];
      return new Uint8Array(stored.value);
    });
  }

  async close(): Promise<void> {
    await this.sessionQueue.close();
    await this.db.close();
  }
}
