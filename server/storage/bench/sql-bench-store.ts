import { jobStates } from '../../../wire/job-states.js';
import type {
  AgentRecord,
  BenchStore,
  ClaimedTask,
  CreateJobResult,
  FinishedJob,
  FinishJobOptions,
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
import { instanceField, instanceOf } from './bench-store.js';
import { type AgentRow, type JobRow, type SessionRow, agentFromRow, insertSession, jobFromRow, sessionFromRow } from './bench-rows.js';
import * as jobs from './job-rules.js';
import * as queue from './job-queue-rules.js';
import { asOf, closeSession, expireDue, firstFree, idleMs, inUse, listLeasesAsOf, lockPool, lockSession } from './session-lease-rules.js';
import { SqlBoardHealthStore, SqlWaitlist, SqlWorkerRegistry } from './sql-side-stores.js';
import { SqlHealthChecks, SqlSerialInput } from './sql-worker-requests.js';
import { SqlDebugArmings } from './debug-arming-store.js';
import type { SessionQueueStore } from './session-queue-store.js';
import type { SqlExecutor } from './sql/sql-executor.js';
import { all, one, run, type Steps } from '../sql-steps.js';
import { BoundedCache } from './bounded-cache.js';

/** How many agents a store keeps in memory (by token and by id): far more than a lab's agents at once. */
const CACHED_AGENTS = 4096;

/**
 * The bench store, once for SQLite and PostgreSQL (decision 0545): the rules are written once as
 * steps (`session-lease-rules.ts`, `job-rules.ts`, `job-queue-rules.ts`, the side stores), and an
 * executor per dialect runs them, in one transaction each where a rule both checks and changes.
 * `SqliteBenchStore` and `PostgresBenchStore` only open their database and hand it over. The same
 * contract suite runs on both (test/contract/bench-store-contract.ts).
 */
export abstract class SqlBenchStore implements BenchStore {
  /** Per dialect: how waiters wake differs (decision 0555). */
  abstract readonly sessionQueue: SessionQueueStore;
  readonly boardHealth: SqlBoardHealthStore;
  readonly healthChecks: SqlHealthChecks;
  readonly serialInput: SqlSerialInput;
  readonly waitlist: SqlWaitlist;
  readonly workers: SqlWorkerRegistry;
  readonly debugArmings: SqlDebugArmings;

  /**
   * Agents as read, by token hash and by id. An agent's row never changes and is never deleted (no
   * statement of the store does either), so what was read once is true for good; only agents found
   * are kept, so one registered meanwhile on another replica is found at its first request. This
   * saves every authenticated request its round trip to the database (decision 0600). A store that
   * comes to revoke or rotate agents' tokens must drop the entry on every replica first.
   */
  private readonly agentsByToken = new BoundedCache<string, AgentRecord>(CACHED_AGENTS);
  private readonly agentsById = new BoundedCache<string, AgentRecord>(CACHED_AGENTS);

  constructor(protected readonly sql: SqlExecutor) {
    this.boardHealth = new SqlBoardHealthStore(sql);
    this.healthChecks = new SqlHealthChecks(sql);
    this.serialInput = new SqlSerialInput(sql);
    this.waitlist = new SqlWaitlist(sql);
    this.workers = new SqlWorkerRegistry(sql);
    this.debugArmings = new SqlDebugArmings(sql);
  }

  /** Statements and transactions run so far (the benchmark reports them per job). */
  get counters(): { readonly statements: number; readonly transactions: number } {
    return { ...this.sql.counters };
  }

  private get d() {
    return this.sql.dialect;
  }

  async ping(): Promise<void> {
    await this.sql.plain(() => one('SELECT 1 AS one'));
  }

  async insertAgent(agent: AgentRecord): Promise<void> {
    await this.sql.plain(() => run('INSERT INTO agents (agent_id, label, token_sha256, created_at_ms) VALUES (?, ?, ?, ?)', [agent.agentId, agent.label, agent.tokenSha256, agent.createdAtMs]));
  }

  async getAgent(agentId: string): Promise<AgentRecord | undefined> {
    const known = this.agentsById.get(agentId);
    if (known) return { ...known };
    const row = await this.sql.plain(() => one<AgentRow>('SELECT * FROM agents WHERE agent_id = ?', [agentId]));
    return row && this.remember(agentFromRow(row));
  }

  async findAgentByTokenSha256(tokenSha256: string): Promise<AgentRecord | undefined> {
    const known = this.agentsByToken.get(tokenSha256);
    if (known) return { ...known };
    const row = await this.sql.plain(() => one<AgentRow>('SELECT * FROM agents WHERE token_sha256 = ?', [tokenSha256]));
    return row && this.remember(agentFromRow(row));
  }

  /** Keeps `agent` (a copy: callers may change the record they get) and answers another copy. */
  private remember(agent: AgentRecord): AgentRecord {
    const kept = { ...agent };
    this.agentsByToken.set(kept.tokenSha256, kept);
    this.agentsById.set(kept.agentId, kept);
    return { ...kept };
  }

  expireSessions(nowMs: number): Promise<SessionRecord[]> {
    return this.sql.transaction(() => expireDue(this.d, nowMs));
  }

  openSession(session: SessionRecord, options: { instances?: readonly string[] } = {}): Promise<OpenSessionResult> {
    const d = this.d;
    const candidates = session.instance !== undefined || !options.instances?.length ? [instanceOf(session)] : options.instances;
    return this.sql.transaction(function* (): Steps<OpenSessionResult> {
      // The pool's lock (a board id names a pool, decision 0510): its instances' lease checks.
      yield* lockPool(d, session.board);
      yield* expireDue(d, session.createdAtMs);
      const pick = yield* firstFree(candidates, session.createdAtMs);
      if ('lease' in pick) return { kind: 'board-leased', lease: pick.lease };
      const { instance: _asked, ...rest } = session;
      const opened: SessionRecord = { ...rest, ...instanceField(session.board, pick.free) };
      yield* insertSession(opened);
      yield* run("INSERT INTO leases (instance, board, holder_kind, holder_id, agent_id) VALUES (?, ?, 'session', ?, ?)", [pick.free, session.board, session.sessionId, session.agentId]);
      return { kind: 'opened', session: opened };
    });
  }

  getSession(sessionId: string, nowMs: number): Promise<SessionRecord | undefined> {
    // A plain read: a session due at `nowMs` is shown expired, the sweep (`expireSessions`) records it.
    return this.sql.plain(function* () {
      const row = yield* one<SessionRow>('SELECT * FROM sessions WHERE session_id = ?', [sessionId]);
      return row && (yield* asOf(sessionFromRow(row), nowMs));
    });
  }

  private changeSession(sessionId: string, nowMs: number, change: (s: SessionRecord) => Steps<SessionRow>): Promise<SessionChangeResult> {
    const d = this.d;
    return this.sql.transaction(function* (): Steps<SessionChangeResult> {
      yield* expireDue(d, nowMs);
      const row = yield* lockSession(d, sessionId);
      if (!row) return { kind: 'not-found' };
      const session = sessionFromRow(row);
      if (session.state !== 'active') return { kind: 'not-active', session };
      const changed = yield* change(session);
      return { kind: 'changed', session: yield* inUse(sessionFromRow(changed), nowMs) };
    });
  }

  heartbeatSession(sessionId: string, nowMs: number): Promise<SessionChangeResult> {
    return this.changeSession(sessionId, nowMs, function* (s) {
      const row = yield* one<SessionRow>('UPDATE sessions SET expires_at_ms = ?, last_heartbeat_at_ms = ? WHERE session_id = ? RETURNING *', [nowMs + idleMs(s.idleSeconds), nowMs, sessionId]);
      return row!;
    });
  }

  endSession(sessionId: string, nowMs: number): Promise<SessionChangeResult> {
    return this.changeSession(sessionId, nowMs, function* () {
      const row = yield* one<SessionRow>("UPDATE sessions SET state = 'ended', ended_at_ms = ? WHERE session_id = ? RETURNING *", [nowMs, sessionId]);
      yield* closeSession(sessionId, 'ended', nowMs);
      return row!;
    });
  }

  listActiveSessions(nowMs: number): Promise<SessionWithAgent[]> {
    const seq = this.d.seq;
    return this.sql.plain(function* () {
      const rows = yield* all<SessionRow & { agent_label: string }>(
        `SELECT s.*, a.label AS agent_label FROM sessions s JOIN agents a ON a.agent_id = s.agent_id
         WHERE s.state = 'active' ORDER BY s.created_at_ms, s.${seq}`,
      );
      const seen: SessionWithAgent[] = [];
      for (const r of rows) seen.push({ ...(yield* asOf(sessionFromRow(r), nowMs)), agentLabel: r.agent_label });
      return seen.filter((s) => s.state === 'active');
    });
  }

  createJob(job: JobRecord, options: { maxQueuedPerBoard: number; nowMs: number; instances?: readonly string[] }): Promise<CreateJobResult> {
    return this.sql.transaction(() => jobs.createJob(this.d, job, options));
  }

  getJob(jobId: string): Promise<JobRecord | undefined> {
    return this.sql.plain(() => jobs.jobById(jobId));
  }

  async claimJob(request: { workerId: string; boards: readonly string[]; nowMs: number; claimMs: number | null }): Promise<JobRecord | undefined> {
    return this.sql.plain(() => queue.claimJob(this.d, request));
  }

  async claimTask(request: { workerId: string; boards: readonly string[]; checkBoards: readonly string[]; nowMs: number; claimMs: number | null }): Promise<ClaimedTask | undefined> {
    if (request.boards.length > 0) {
      if (this.d.name === 'postgres') {
        // One statement for the claim and the look for a check (decision 0860).
        const seen = await this.sql.plain(() => queue.claimJobSeeingChecks(this.d, request));
        if (seen.job) return { job: seen.job };
        if (!seen.checkWaiting) return undefined;
      } else {
        const job = await this.claimJob(request);
        if (job) return { job };
      }
    }
    const check = await this.healthChecks.claim(request.workerId, request.checkBoards, request.nowMs);
    return check && { check };
  }

  markJobRunning(jobId: string, workerId: string, nowMs: number): Promise<JobClaimStatus> {
    return this.sql.plain(() => queue.markJobRunning(jobId, workerId, nowMs));
  }

  renewJobClaim(jobId: string, workerId: string, renewal: { nowMs: number; claimMs: number | null; uart?: UartRecord }): Promise<JobClaimStatus> {
    return this.sql.plain(() => queue.renewJobClaim(jobId, workerId, renewal));
  }

  requestJobCancel(jobId: string, reason: string, nowMs: number): Promise<JobRecord | undefined> {
    return this.sql.transaction(() => jobs.requestJobCancel(jobId, reason, nowMs));
  }

  failLapsedClaims(nowMs: number): Promise<JobRecord[]> {
    return this.sql.transaction(() => queue.failLapsedClaims(this.d, nowMs));
  }

  extendClaims(untilMs: number): Promise<number> {
    return this.sql.plain(() => queue.extendClaims(untilMs));
  }

  failOverdueQueuedJobs(createdAtOrBeforeMs: number, failure: { reason: string; nowMs: number }): Promise<JobRecord[]> {
    return this.sql.transaction(() => queue.failOverdueQueuedJobs(this.d, createdAtOrBeforeMs, failure));
  }

  releaseWorkerJobs(workerId: string, release: { reason: string; nowMs: number; keep?: readonly string[] }): Promise<JobRecord[]> {
    return this.sql.transaction(() => queue.releaseWorkerJobs(this.d, workerId, release));
  }

  finishJob(jobId: string, outcome: JobOutcome, options?: FinishJobOptions): Promise<FinishedJob> {
    return this.sql.transaction(() => jobs.finishJob(this.d, jobId, outcome, options));
  }

  listLeases(nowMs: number): Promise<LeaseWithAgent[]> {
    return this.sql.plain(() => listLeasesAsOf(nowMs));
  }

  boardActivity(): Promise<Map<string, { queued: number; active: number }>> {
    return this.activityBy('board');
  }

  instanceActivity(): Promise<Map<string, { queued: number; active: number }>> {
    return this.activityBy('instance');
  }

  private async activityBy(column: 'board' | 'instance'): Promise<Map<string, { queued: number; active: number }>> {
    const rows = await this.sql.plain(() =>
      all<{ key: string; queued: number; active: number }>(
        `SELECT ${column} AS key, COUNT(*) FILTER (WHERE state = 'queued') AS queued, COUNT(*) FILTER (WHERE state IN ('flashing', 'running')) AS active
         FROM jobs WHERE state IN ('queued', 'flashing', 'running') GROUP BY ${column}`,
      ),
    );
    return new Map(rows.map((r) => [r.key, { queued: r.queued, active: r.active }]));
  }

  async counts(nowMs?: number): Promise<StoreCounts> {
    const { agents, open } = (await this.sql.plain(() =>
      one<{ agents: number; open: number }>("SELECT (SELECT COUNT(*) FROM agents) AS agents, (SELECT COUNT(*) FROM sessions WHERE state = 'active') AS open"),
    ))!;
    const sessionsOpen = nowMs === undefined ? open : (await this.listActiveSessions(nowMs)).length;
    const byState = await this.sql.plain(() => all<{ state: JobState; n: number }>('SELECT state, COUNT(*) AS n FROM jobs GROUP BY state'));
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
    const rows = await this.sql.plain(() =>
      all<JobRow & { agent_label: string }>(
        `SELECT j.*, a.label AS agent_label FROM jobs j JOIN agents a ON a.agent_id = j.agent_id ${where}
         ORDER BY j.created_at_ms DESC, j.${this.d.seq} DESC LIMIT ?`,
        [limit],
      ),
    );
    return rows.map((r) => ({ ...jobFromRow(r), agentLabel: r.agent_label }));
  }

  secret(name: string, create: () => Uint8Array): Promise<Uint8Array> {
    return this.sql.transaction(function* () {
      const row = yield* one<{ value: Buffer }>('SELECT value FROM secrets WHERE name = ?', [name]);
      if (row) return new Uint8Array(row.value);
      // Two replicas starting at once may both create one: the first insert wins, and both answer its value.
      yield* run('INSERT INTO secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING', [name, Buffer.from(create())]);
      const stored = yield* one<{ value: Buffer }>('SELECT value FROM secrets WHERE name = ?', [name]);
      return new Uint8Array(stored!.value);
    });
  }

  close(): Promise<void> {
    return this.sql.close();
  }
}
