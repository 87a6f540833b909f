import type { UploadedFile } from '../../../wire/form-fields.js';
import type { AgentRecord, JobRecord, JobWithAgent, SessionRecord } from '../../storage/bench/bench-store.js';
import { AgentAuth } from './agent-auth.js';
import { AgentLongPolls } from './agent-long-polls.js';
import type { BenchDeps } from './bench-deps.js';
import type { JobLive } from './job-live.js';
import { JobCancel } from './job-cancel.js';
import { JobStreams, type SerialInputReceipt } from './job-streams.js';
import type { TimerHandle } from '../../../core/clock.js';
import { LocalWorker, LOCAL_WORKER_ID } from '../workers/local-worker.js';
import { type AdminOverview, type BenchOverview, BenchStatus, type ServiceHealth } from './bench-status.js';
import type { BoardQueue, BoardState } from './board-state.js';
import type { SessionWait } from './session-leases.js';
import type { BoardAfterAdmin, BoardHealthCheck } from './kept-board-health.js';
import { BoardAccess } from './board-access.js';
import { BoardHealthAdmin } from './board-health-admin.js';
import { FlashJobs } from './flash-jobs.js';
import { HEALTH_CHECK_GRACE_MS } from './stored-board-health.js';
import { SessionLeases } from './session-leases.js';

export type { BenchDeps } from './bench-deps.js';
export { BENCH_API_VERSION } from './bench-version.js';
export { DEFAULT_HEALTH_CHECK_TIMEOUT_MS } from './board-health-admin.js';

/**
 * The bench: agents, exclusive board leases (sessions), flash jobs and board-health
 * administration, over the store and the dispatcher. A facade over one part per concern
 * (agent-auth.ts, session-leases.ts, flash-jobs.ts, board-health-admin.ts, bench-status.ts,
 * sharing board-access.ts). HTTP-free: refusals are `BenchError`s from the catalog
 * (bench-errors.ts), given their HTTP status by the routes; answers are records and domain values,
 * which views/ shape for the wire (decision 0880). Every change is committed to the store before
 * the method returns.
 */
export class Bench {
  private readonly agents: AgentAuth;
  private readonly sessions: SessionLeases;
  private readonly jobs: FlashJobs;
  private readonly boardHealth: BoardHealthAdmin;
  private readonly status: BenchStatus;
  private readonly streams: JobStreams;
  private readonly cancels: JobCancel;

  /** Jobs as they run in this process (live UART, states, serial input). */
  get live(): JobLive {
    return this.deps.live;
  }

  /** The worker in this process, when the server runs one (the embedded default). */
  private readonly worker: LocalWorker | undefined;
  private sweepTimer: TimerHandle | undefined;
  private closing = false;

  constructor(private readonly deps: BenchDeps) {
    const worker = deps.localWorker && new LocalWorker(deps, deps.localWorker);
    // The job deadline of the worker in this process is the Retry-After of a board a job holds.
    const jobDeadlineMs = deps.jobDeadlineMs ?? (worker ? (uartSeconds: number, boardId: string) => worker.deadlineMs(uartSeconds, boardId) : undefined);
    const access = new BoardAccess({ ...deps, jobDeadlineMs });
    const longPolls = new AgentLongPolls(deps.limits.maxLongPollsPerAgent);
    this.worker = worker;
    this.agents = new AgentAuth(deps);
    this.sessions = new SessionLeases({ ...deps, access, longPolls });
    this.jobs = new FlashJobs({ ...deps, access });
    this.streams = new JobStreams({ ...deps, longPolls });
    this.cancels = new JobCancel(deps);
    // A finished job renewed its session in the store: its expiry timer is armed for the new time.
    deps.live.subscribeAll((jobId, event) => {
      if (event.kind !== 'state' || (event.state !== 'done' && event.state !== 'failed')) return;
      // A job that held a board of its own may have freed it for someone waiting.
      this.sessions.boardMayBeFree();
      void (event.job ? Promise.resolve(event.job) : deps.store.getJob(jobId)).then(
        (job) => this.sessions.rearmAfterJob(job?.sessionId ?? null),
        (err: unknown) => deps.logger.error(`re-arming the session of job ${jobId}`, err),
      );
    });
    this.boardHealth = new BoardHealthAdmin({ ...deps, access });
    this.status = new BenchStatus({ ...deps, access, boardHealth: (boardId) => this.boardHealth.boardHealth(boardId) });
  }

  /**
   * Recovers after a (re)start: the jobs the last run's worker in this process left flashing or
   * running fail as `interrupted` (with the UART saved while they ran), what ran out while down
   * expires, expiry timers are armed again, and the worker claims the queued jobs.
   */
  async start(): Promise<void> {
    const { store, logger, clock } = this.deps;
    if (this.worker) {
      const workerId = this.deps.localWorker?.workerId ?? LOCAL_WORKER_ID;
      const interrupted = await store.releaseWorkerJobs(workerId, { reason: 'the bench service restarted', nowMs: clock.nowMs() });
      for (const job of interrupted) logger.warn(`job ${job.jobId} on ${job.board} was interrupted by a restart`);
      // Its health checks too: nothing will report them, and each holds its board until it ends.
      const checks = await store.healthChecks.interrupt(workerId, { reason: 'the bench service restarted while this health check ran', nowMs: clock.nowMs() });
      for (const check of checks) logger.warn(`health check ${check.checkId} on ${check.board} was interrupted by a restart`);
    }
    // A remote worker may have finished a job while this server was down, and delivers its outcome
    // when it hears the server again: its claim gets a claim period and a delivery pause from now.
    const extended = await store.extendClaims(clock.nowMs() + (this.deps.claimGraceAtStartMs ?? 0));
    if (extended > 0) logger.info(`${extended} job(s) running on remote workers kept for their workers to report`);
    const expired = await store.expireSessions(clock.nowMs());
    if (expired.length > 0) logger.info(`${expired.length} session(s) expired while the server was down`);
    await this.sessions.armAll();
    await this.worker?.start();
    this.armClaimSweep();
  }

  /**
   * Every `claimSweepMs` (injected clock): jobs whose remote worker stopped renewing its claim fail
   * as `interrupted`, with the UART it reported, and jobs that waited in the queue longer than
   * `maxQueueWaitSeconds` fail as `unavailable`. Safe on every replica at once (a job fails once).
   */
  private armClaimSweep(): void {
    if (this.closing) return;
    const { clock, store, logger, live } = this.deps;
    this.sweepTimer = clock.setTimeout(() => {
      const nowMs = clock.nowMs();
      const waitSeconds = this.deps.limits.maxQueueWaitSeconds;
      // A health check its worker never reported frees its board (docs/lab.md).
      void store.healthChecks
        .expire(nowMs, {
          graceMs: HEALTH_CHECK_GRACE_MS,
          reason: `its worker did not report this health check within its deadline and ${HEALTH_CHECK_GRACE_MS / 1000} s more`,
        })
        .then((expired) => {
          for (const check of expired) logger.warn(`health check ${check.checkId} on ${check.board} lapsed: its worker never reported it`);
        })
        .catch((err: unknown) => logger.error('sweeping lapsed health checks failed', err));
      void Promise.all([
        store.failLapsedClaims(nowMs),
        store.failOverdueQueuedJobs(nowMs - waitSeconds * 1000, {
          reason: `no worker started this job within ${waitSeconds} s of its submission (its board had no worker, or its queue did not move); submit it again`,
          nowMs,
        }),
      ])
        .then((lists) => {
          for (const job of lists.flat()) {
            logger.warn(`job ${job.jobId} on ${job.board} failed: ${job.failure?.message ?? 'its worker went silent'}`);
            live.publishState(job.jobId, job.state, job);
            this.deps.gateway.jobQueued(job.board);
          }
        })
        .catch((err: unknown) => logger.error('sweeping lapsed job claims failed', err))
        // Jobs that ended without an outcome through this process are forgotten here too.
        .then(() => this.deps.gateway.forgetEnded())
        .catch((err: unknown) => logger.error('forgetting ended jobs failed', err))
        // Each end deletes its job's unread serial input (decision 0650); this catches any left (an older version's).
        .then(() => store.serialInput.purgeEnded())
        .catch((err: unknown) => logger.error('purging the serial input of ended jobs failed', err))
        .finally(() => this.armClaimSweep());
    }, this.deps.claimSweepMs ?? 5_000);
  }

  /**
   * Stops expiry timers and the worker in this process; the jobs it stops keep their state (and
   * the UART saved so far) for the next start to fail as `interrupted`, exactly as after a crash.
   */
  async close(): Promise<void> {
    this.closing = true;
    if (this.sweepTimer !== undefined) this.deps.clock.clearTimeout(this.sweepTimer);
    this.sessions.close();
    this.deps.pools?.close();
    await this.worker?.close();
    await this.deps.gateway.close();
  }

  registerAgent(label: string): Promise<{ agent: AgentRecord; token: string }> {
    return this.agents.registerAgent(label);
  }

  authenticate(header: string | undefined): Promise<AgentRecord> {
    return this.agents.authenticate(header);
  }

  /** With `wait`, queues for a busy board (`wait_seconds`, issue 11) until granted or the wait runs out. */
  openSession(agent: AgentRecord, boardId: string, idleSeconds: number, wait?: SessionWait): Promise<SessionRecord> {
    return this.sessions.openSession(agent, boardId, idleSeconds, wait);
  }

  getSession(agent: AgentRecord, sessionId: string): Promise<SessionRecord> {
    return this.sessions.getSession(agent, sessionId);
  }

  heartbeat(agent: AgentRecord, sessionId: string, action?: string): Promise<SessionRecord> {
    return this.sessions.heartbeat(agent, sessionId, action);
  }

  endSession(agent: AgentRecord, sessionId: string): Promise<SessionRecord> {
    return this.sessions.endSession(agent, sessionId);
  }

  submitFlash(agent: AgentRecord, input: { board: string; firmware: UploadedFile; uartSeconds: number; session: string }): Promise<JobRecord> {
    return this.jobs.submitFlash(agent, input);
  }

  getJob(agent: AgentRecord, jobId: string): Promise<JobRecord> {
    return this.jobs.getJob(agent, jobId);
  }

  /** The job once done or failed, or as it is after `waitSeconds` (`GET /api/v1/jobs/{id}?wait=`). */
  waitForJob(agent: AgentRecord, jobId: string, waitSeconds: number, signal: AbortSignal): Promise<JobRecord> {
    return this.streams.waitForEnd(agent, jobId, waitSeconds, signal);
  }

  /** Stops the caller's job (`POST /api/v1/jobs/{id}/cancel`, decision 0535); a finished one is answered as it is. */
  cancelJob(agent: AgentRecord, jobId: string, reason: string, signal: AbortSignal): Promise<JobRecord> {
    return this.cancels.cancel(agent, jobId, reason, signal);
  }

  /** The session line of `boardId`'s pool on every replica (`GET /api/v1/boards/{board}/queue`, decisions 0555, 1030): how many wait, the caller's place. */
  boardQueue(agent: AgentRecord, boardId: string): Promise<BoardQueue> {
    return this.sessions.queueOf(boardId, agent.agentId);
  }

  /** The job's UART as it is printed (`GET /api/v1/jobs/{id}/uart`); returns the stop. */
  streamJobUart(agent: AgentRecord, jobId: string, options: Parameters<JobStreams['streamUart']>[2]): Promise<() => void> {
    return this.streams.streamUart(agent, jobId, options);
  }

  /** Any job with its agent's label, for the operator's console; undefined when there is none. */
  async operatorJob(jobId: string): Promise<{ job: JobRecord; agentLabel: string } | undefined> {
    const record = await this.deps.store.getJob(jobId);
    if (!record) return undefined;
    const agent = await this.deps.store.getAgent(record.agentId);
    return { job: record, agentLabel: agent?.label ?? record.agentId };
  }

  /** A board's most recent jobs (of the last 500 on the bench), newest first, for the operator's console. */
  async boardHistory(boardId: string, limit = 50): Promise<JobWithAgent[]> {
    return (await this.deps.store.recentJobs(500)).filter((j) => j.board === boardId).slice(0, limit);
  }

  /** Any job's UART as it is printed, for the operator's console. */
  streamJobUartAsOperator(jobId: string, options: Parameters<JobStreams['streamUart']>[2]): Promise<() => void> {
    return this.streams.streamUartAsOperator(jobId, options);
  }

  /** Serial input for a running job (`POST /api/v1/jobs/{id}/uart`): written, or queued for its worker. */
  writeJobUart(agent: AgentRecord, jobId: string, bytes: Uint8Array, signal: AbortSignal): Promise<SerialInputReceipt> {
    return this.streams.writeUart(agent, jobId, bytes, signal);
  }

  /** Settles once the session expiry sweeps its timers started have finished (tests on a fake clock). */
  expirySettled(): Promise<void> {
    return this.sessions.expirySettled();
  }

  /** Settles once the worker in this process has started job `jobId` (its deadline runs). For tests. */
  jobStarted(jobId: string): Promise<void> {
    if (!this.worker) return Promise.reject(new Error('this bench runs no worker in its process'));
    return this.worker.started(jobId);
  }

  /**
   * Waits until the worker in this process runs no job and has none left to claim (tests). A job
   * the worker has just finished lets it claim the board's next one a few turns later, so the
   * store is asked until nothing is queued or active on the worker's boards.
   */
  async idle(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    const served = new Set(this.deps.boards.ids);
    for (let turn = 0; ; turn++) {
      await worker.idle();
      const activity = await this.deps.store.boardActivity();
      const busy = [...activity].filter(([board, a]) => served.has(board) && a.queued + a.active > 0).map(([board]) => board);
      if (busy.length === 0) return;
      if (turn >= 10_000) throw new Error(`the bench did not become idle: jobs still queued or active on ${busy.join(', ')}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Every board as it stands now (`GET /api/v1/boards`). */
  listBoards(): Promise<BoardState[]> {
    return this.status.listBoards();
  }

  health(): Promise<ServiceHealth> {
    return this.status.health();
  }

  /** What the pages and `GET /api/v1/stats` show (views/bench-snapshot.ts makes it their snapshot). */
  overview(): Promise<BenchOverview> {
    return this.status.overview();
  }

  admin(): Promise<AdminOverview> {
    return this.status.admin();
  }

  releaseBoard(boardId: string): Promise<BoardAfterAdmin> {
    return this.boardHealth.releaseBoard(boardId);
  }

  healthCheckBoard(boardId: string): Promise<BoardHealthCheck> {
    return this.boardHealth.healthCheckBoard(boardId);
  }
}
