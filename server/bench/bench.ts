import type { UploadedFile } from '../http/form-schema.js';
import type { AgentRecord } from '../store/bench-store.js';
import { AgentAuth } from './agent-auth.js';
import type { BenchDeps } from './bench-deps.js';
import type { JobLive } from './job-live.js';
import type {
  AdminBody,
  AgentRegistrationBody,
  BoardBody,
  BoardHealthCheckBody,
  BoardReleaseBody,
  HealthBody,
  JobBody,
  SessionBody,
  StatsBody,
} from './bench-schemas.js';
import type { BenchSnapshot } from './bench-snapshot.js';
import { BenchStatus } from './bench-status.js';
import { BoardAccess } from './board-access.js';
import { BoardHealthAdmin } from './board-health-admin.js';
import { FlashJobs } from './flash-jobs.js';
import { SessionLeases } from './session-leases.js';

export type { BenchDeps } from './bench-deps.js';
export { BENCH_API_VERSION } from './bench-version.js';
export { DEFAULT_HEALTH_CHECK_TIMEOUT_MS } from './board-health-admin.js';

/**
 * The bench: agents, exclusive board leases (sessions), flash jobs and board-health
 * administration, over the store and the dispatcher. A facade over one part per concern
 * (agent-auth.ts, session-leases.ts, flash-jobs.ts, board-health-admin.ts, bench-status.ts,
 * sharing board-access.ts). HTTP-free: refusals are `BenchError`s from the catalog
 * (bench-errors.ts), given their HTTP status by the routes. Every change is committed to the
 * store before the method returns.
 */
export class Bench {
  private readonly agents: AgentAuth;
  private readonly sessions: SessionLeases;
  private readonly jobs: FlashJobs;
  private readonly boardHealth: BoardHealthAdmin;
  private readonly status: BenchStatus;

  /** Jobs as they run in this process (live UART, states, serial input). */
  get live(): JobLive {
    return this.deps.live;
  }

  constructor(private readonly deps: BenchDeps) {
    const access = new BoardAccess(deps);
    this.agents = new AgentAuth(deps);
    this.sessions = new SessionLeases({ ...deps, access });
    this.jobs = new FlashJobs({ ...deps, access, sessions: this.sessions });
    this.boardHealth = new BoardHealthAdmin({ ...deps, access });
    this.status = new BenchStatus({ ...deps, access, boardHealth: (boardId) => this.boardHealth.boardHealth(boardId) });
  }

  /**
   * Recovers after a (re)start: fails jobs the last run left flashing/running as `interrupted`,
   * expires what ran out while down, re-arms expiry timers and queues waiting jobs again.
   */
  async start(): Promise<void> {
    const { store, logger, clock } = this.deps;
    const { requeued, interrupted, expired } = await store.recoverAfterRestart(clock.nowMs());
    for (const job of interrupted) logger.warn(`job ${job.jobId} on ${job.board} was interrupted by a restart`);
    if (expired.length > 0) logger.info(`${expired.length} session(s) expired while the server was down`);
    await this.sessions.armAll();
    await this.jobs.requeue(requeued);
  }

  /** Stops expiry timers, then the dispatcher; jobs it cancels are left for the next start. */
  async close(): Promise<void> {
    this.sessions.close();
    await this.jobs.close();
  }

  registerAgent(label: string): Promise<AgentRegistrationBody> {
    return this.agents.registerAgent(label);
  }

  authenticate(header: string | undefined): Promise<AgentRecord> {
    return this.agents.authenticate(header);
  }

  openSession(agent: AgentRecord, boardId: string, idleSeconds: number): Promise<SessionBody> {
    return this.sessions.openSession(agent, boardId, idleSeconds);
  }

  getSession(agent: AgentRecord, sessionId: string): Promise<SessionBody> {
    return this.sessions.getSession(agent, sessionId);
  }

  heartbeat(agent: AgentRecord, sessionId: string): Promise<SessionBody> {
    return this.sessions.heartbeat(agent, sessionId);
  }

  endSession(agent: AgentRecord, sessionId: string): Promise<SessionBody> {
    return this.sessions.endSession(agent, sessionId);
  }

  submitFlash(agent: AgentRecord, input: { board: string; firmware: UploadedFile; uartSeconds: number; session: string }): Promise<JobBody> {
    return this.jobs.submitFlash(agent, input);
  }

  getJob(agent: AgentRecord, jobId: string): Promise<JobBody> {
    return this.jobs.getJob(agent, jobId);
  }

  /** Waits until no job is in flight (tests and orderly shutdown). */
  idle(): Promise<void> {
    return this.jobs.idle();
  }

  listBoards(): Promise<BoardBody[]> {
    return this.status.listBoards();
  }

  health(): Promise<HealthBody> {
    return this.status.health();
  }

  /** The read-only view model of the pages and `GET /api/v1/stats`. */
  getSnapshot(): Promise<BenchSnapshot> {
    return this.status.getSnapshot();
  }

  stats(): Promise<StatsBody> {
    return this.status.stats();
  }

  admin(): Promise<AdminBody> {
    return this.status.admin();
  }

  releaseBoard(boardId: string): Promise<BoardReleaseBody> {
    return this.boardHealth.releaseBoard(boardId);
  }

  healthCheckBoard(boardId: string): Promise<BoardHealthCheckBody> {
    return this.boardHealth.healthCheckBoard(boardId);
  }
}
