import { createHash, randomBytes } from 'node:crypto';
import type { Board } from '../../boards/board-schema.js';
import { type Backend, BackendError, type FirmwareImage, NANOS_PER_SECOND } from '../../backends/backend.js';
import { loadFirmwareImage } from '../../backends/image-check.js';
import { type Clock, isoFromMs, type TimerHandle } from '../../core/clock.js';
import { type ElfFile, ElfError, loadableSegments, machineName, parseElf } from '../../core/elf.js';
import type { JobDispatcher } from '../../harness/dispatcher.js';
import type { FirmwareRun } from '../../harness/run-firmware.js';
import type { UploadedFile } from '../http/form-schema.js';
import { fieldValueError, HttpError } from '../http/http-error.js';
import type { Logger } from '../http/logger.js';
import type {
  AgentRecord,
  BenchStore,
  ElfSummary,
  JobRecord,
  LeaseWithAgent,
  SessionRecord,
  UartRecord,
} from '../store/bench-store.js';
import type { FirmwareBlobStore } from '../store/firmware-blob-store.js';
import type { BenchSnapshot } from './bench-snapshot.js';
import type { BenchLimits } from './bench-limits.js';
import type {
  AdminBody,
  AgentRegistrationBody,
  BoardBody,
  BoardHealthBody,
  BoardHealthCheckBody,
  BoardReleaseBody,
  HealthBody,
  JobBody,
  SessionBody,
  StatsBody,
} from './bench-schemas.js';
import type { ResolvedBoard } from './board-backends.js';
import { type BoardHealthControl, boardHealthControlOf } from './board-health-control.js';
import type { LiveBoards } from './live-boards.js';
import { jobFailureDetail } from './job-failure-detail.js';
import { JobUartKeeper, uartRecordOf } from './job-uart-keeper.js';
import { healthBody, jobBody, sessionBody } from './bench-views.js';
import { runHealthCheck } from './run-health-check.js';
import { adminBoard, adminJob, adminSession, boardBody, type BoardState, boardState, snapshotBoard, statsBody } from './board-views.js';

/** The interface version this server implements (spec `bench-service.md`). */
export const BENCH_API_VERSION = '0.3.4';

export interface BenchDeps {
  clock: Clock;
  store: BenchStore;
  blobs: FirmwareBlobStore;
  /** Every board with its backend, availability re-checked when it matters (live-boards.ts). */
  boards: LiveBoards;
  dispatcher: JobDispatcher;
  limits: BenchLimits;
  logger: Logger;
  /** Throws `BackendError('bad-image', ...)` when `image` cannot run on `board` (backends/image-check.ts). */
  checkImage: (image: FirmwareImage, board: Board) => void;
  /** Entries on the waitlist (owned by the pages), for the snapshot totals. */
  waitlistCount: () => number;
  /** Host ms an administrator's health check may take before it is aborted. Default 120 000. */
  healthCheckTimeoutMs?: number;
  /**
   * Host ms the dispatcher allows a job of `uartSeconds` from leaving the queue to its end
   * (`LocalDispatcher.deadlineMs`): the `Retry-After` of a board held by a job. Unknown (a remote
   * dispatcher that does not say): `Retry-After: 5`.
   */
  jobDeadlineMs?: (uartSeconds: number, boardId: string) => number;
}

/** Default of `BenchDeps.healthCheckTimeoutMs`: the probe's flash budget plus a slow boot. */
export const DEFAULT_HEALTH_CHECK_TIMEOUT_MS = 120_000;

const TOKEN_PREFIX = 'hb_';

/** Random public identifier: `prefix` + 16 random bytes, base64url. */
function newId(prefix: string): string {
  return `${prefix}_${randomBytes(16).toString('base64url')}`;
}

const sha256Hex = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex');

/**
 * The bench: agents, exclusive board leases (sessions), and flash jobs, over the store and the
 * dispatcher. HTTP-free except for the errors it throws (`HttpError`, the one error type), so
 * the routes stay thin. Every change is committed to the store before the method returns.
 */
export class Bench {
  private readonly expiryTimers = new Map<string, TimerHandle>();
  private readonly jobsInFlight = new Set<Promise<void>>();
  /** Jobs handed to the dispatcher and not settled yet, by session: cancelled when it closes. */
  private readonly sessionJobs = new Map<string, Set<string>>();
  private readonly startedAtMs: number;
  /** Boards running an administrator's health check: when it started (host ms), and its end. */
  private readonly healthChecks = new Map<string, { startedAtMs: number; done: Promise<void> }>();
  private closing = false;

  constructor(private readonly deps: BenchDeps) {
    this.startedAtMs = deps.clock.nowMs();
  }

  private now(): number {
    return this.deps.clock.nowMs();
  }

  /**
   * Recovers after a (re)start: fails jobs the last run left flashing/running as `interrupted`,
   * expires what ran out while down, re-arms expiry timers and queues waiting jobs again.
   */
  async start(): Promise<void> {
    const { requeued, interrupted, expired } = await this.deps.store.recoverAfterRestart(this.now());
    for (const job of interrupted) this.deps.logger.warn(`job ${job.jobId} on ${job.board} was interrupted by a restart`);
    if (expired.length > 0) this.deps.logger.info(`${expired.length} session(s) expired while the server was down`);
    for (const session of await this.deps.store.listActiveSessions(this.now())) this.armExpiry(session);
    for (const job of requeued) {
      const bytes = await this.deps.blobs.get(job.firmware.sha256);
      if (!bytes) {
        await this.finishFailed(job.jobId, 'internal', `the firmware ${job.firmware.sha256} of this job is missing from the blob store`);
        continue;
      }
      let image: FirmwareImage;
      try {
        image = loadFirmwareImage(bytes);
      } catch (err) {
        await this.finishFailed(job.jobId, 'internal', `the stored firmware of this job no longer parses: ${(err as Error).message}`);
        continue;
      }
      if (image.sha256 !== job.firmware.sha256) {
        await this.finishFailed(job.jobId, 'internal', `the stored firmware of this job is corrupted (sha256 ${image.sha256}, expected ${job.firmware.sha256})`);
        continue;
      }
      this.launch(job, image);
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    for (const handle of this.expiryTimers.values()) this.deps.clock.clearTimeout(handle);
    this.expiryTimers.clear();
    // Jobs cancelled by shutdown keep their state (a running one saves its UART first): the next
    // start fails the running ones as `interrupted`, with that UART, and runs the queued ones,
    // exactly as after a crash.
    await this.deps.dispatcher.close();
    await Promise.all([...this.jobsInFlight]);
  }

  // ---- agents -------------------------------------------------------------------------------

  async registerAgent(label: string): Promise<AgentRegistrationBody> {
    const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    const agent: AgentRecord = { agentId: newId('ag'), label, tokenSha256: sha256Hex(token), createdAtMs: this.now() };
    await this.deps.store.insertAgent(agent);
    return { agent_id: agent.agentId, label: agent.label, token, created_at: isoFromMs(agent.createdAtMs) };
  }

  /** The agent an `authorization` header names; 401 (with `WWW-Authenticate`) otherwise. */
  async authenticate(header: string | undefined): Promise<AgentRecord> {
    if (header === undefined || header.trim() === '') {
      throw new HttpError(401, 'Not authenticated: send "authorization: Bearer <token>" (register at POST /api/v1/agents/register)', {
        'WWW-Authenticate': 'Bearer',
      });
    }
    const match = /^Bearer ([A-Za-z0-9_-]+)$/i.exec(header.trim());
    if (!match || !match[1]!.startsWith(TOKEN_PREFIX)) {
      throw new HttpError(401, 'Invalid authorization header: expected "Bearer hb_..."', { 'WWW-Authenticate': 'Bearer error="invalid_request"' });
    }
    const agent = await this.deps.store.findAgentByTokenSha256(sha256Hex(match[1]!));
    if (!agent) throw new HttpError(401, 'Invalid token: no agent has this token', { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
    return agent;
  }

  // ---- sessions -----------------------------------------------------------------------------

  private boardOr404(boardId: string): Board {
    const board = this.deps.boards.board(boardId);
    if (!board) {
      throw new HttpError(404, `board "${boardId}" not found; boards here: ${this.deps.boards.ids.join(', ') || 'none'}`);
    }
    return board;
  }

  /**
   * The board's backend as of now (availability cached briefly, live-boards.ts): 503 with the
   * reason when it cannot run, 409 while an administrator's health check holds it.
   */
  private async usableOr503(boardId: string): Promise<ResolvedBoard> {
    const resolved = await this.deps.boards.get(boardId);
    if (!resolved.backend) throw new HttpError(503, `board ${boardId} is offline: ${resolved.offlineReason ?? 'no backend'}`);
    const check = this.healthChecks.get(boardId);
    if (check) {
      throw new HttpError(409, `board ${boardId} is running a health check started by an administrator at ${isoFromMs(check.startedAtMs)} (retry_after_seconds=5)`, {
        'Retry-After': '5',
      });
    }
    return resolved;
  }

  /**
   * 409 for a board someone holds: who (label only) and until when, with `Retry-After`. A board
   * held by a job (its own lease, or a closed session's job still stopping) is free at the latest
   * at that job's deadline: from when it left the queue (or now, while it waits) plus the
   * dispatcher's budget for it.
   */
  private async leasedConflict(lease: LeaseWithAgent, agent: AgentRecord): Promise<HttpError> {
    const who = lease.agentId === agent.agentId ? 'you' : `agent "${lease.agentLabel}"`;
    if (lease.holder.kind === 'job') {
      const job = await this.deps.store.getJob(lease.holder.jobId);
      const nowMs = this.now();
      const budgetMs = job && this.deps.jobDeadlineMs ? this.deps.jobDeadlineMs(job.uartSeconds, job.board) : undefined;
      if (job === undefined || budgetMs === undefined) {
        return new HttpError(409, `board ${lease.board} is busy: ${who} leased it for a flash job, until that job finishes (retry_after_seconds=5)`, {
          'Retry-After': '5',
        });
      }
      const deadlineMs = (job.startedAtMs ?? nowMs) + budgetMs;
      const retryAfterSeconds = Math.max(1, Math.ceil((deadlineMs - nowMs) / 1000));
      return new HttpError(
        409,
        `board ${lease.board} is busy: ${who} leased it for a flash job, until that job finishes, at the latest ${isoFromMs(deadlineMs)} (its deadline) (retry_after_seconds=${retryAfterSeconds})`,
        { 'Retry-After': String(retryAfterSeconds) },
      );
    }
    if (lease.expiresAtMs === null) throw new Error(`the session lease on ${lease.board} has no expiry`);
    const retryAfterSeconds = Math.max(1, Math.ceil((lease.expiresAtMs - this.now()) / 1000));
    const until = `until ${isoFromMs(lease.expiresAtMs)} unless renewed (retry_after_seconds=${retryAfterSeconds})`;
    const detail =
      lease.agentId === agent.agentId
        ? `board ${lease.board} is already leased by you (one lease per board) ${until}; use or end that session`
        : `board ${lease.board} is leased by ${who} ${until}`;
    return new HttpError(409, detail, { 'Retry-After': String(retryAfterSeconds) });
  }

  async openSession(agent: AgentRecord, boardId: string, idleSeconds: number): Promise<SessionBody> {
    this.boardOr404(boardId);
    await this.usableOr503(boardId);
    // A session that expired without its timer having fired yet: its jobs stop before anyone else's lease.
    await this.cancelJobsOfClosedSessions();
    const nowMs = this.now();
    const result = await this.deps.store.openSession({
      sessionId: newId('ses'),
      agentId: agent.agentId,
      board: boardId,
      state: 'active',
      idleSeconds,
      createdAtMs: nowMs,
      expiresAtMs: nowMs + Math.round(idleSeconds * 1000),
      endedAtMs: null,
      lastHeartbeatAtMs: null,
    });
    if (result.kind === 'board-leased') throw await this.leasedConflict(result.lease, agent);
    this.armExpiry(result.session);
    return sessionBody(result.session);
  }

  private async ownSession(agent: AgentRecord, sessionId: string): Promise<SessionRecord> {
    const session = await this.deps.store.getSession(sessionId, this.now());
    // Another agent's session is answered exactly like a missing one: existence is not revealed.
    if (!session || session.agentId !== agent.agentId) throw new HttpError(404, `session ${sessionId} not found`);
    return session;
  }

  async getSession(agent: AgentRecord, sessionId: string): Promise<SessionBody> {
    return sessionBody(await this.ownSession(agent, sessionId));
  }

  async heartbeat(agent: AgentRecord, sessionId: string): Promise<SessionBody> {
    await this.ownSession(agent, sessionId);
    const result = await this.deps.store.heartbeatSession(sessionId, this.now());
    if (result.kind === 'not-found') throw new HttpError(404, `session ${sessionId} not found`);
    if (result.kind === 'not-active') throw notActive(result.session, 'heartbeat');
    this.armExpiry(result.session);
    return sessionBody(result.session);
  }

  async endSession(agent: AgentRecord, sessionId: string): Promise<SessionBody> {
    await this.ownSession(agent, sessionId);
    const result = await this.deps.store.endSession(sessionId, this.now());
    if (result.kind === 'not-found') throw new HttpError(404, `session ${sessionId} not found`);
    if (result.kind === 'not-active') throw notActive(result.session, 'end');
    this.disarmExpiry(sessionId);
    this.cancelSessionJobs(result.session);
    return sessionBody(result.session);
  }

  /**
   * Cancels, through the dispatcher, every job of a session that ended or expired (the store
   * already failed its queued ones and passed the lease to the running one, which fails as
   * `cancelled` and frees the board when the dispatcher has stopped it).
   */
  private cancelSessionJobs(session: SessionRecord): void {
    const jobs = this.sessionJobs.get(session.sessionId);
    if (!jobs) return;
    const reason = `session ${session.sessionId} ${session.state} at ${isoFromMs(session.endedAtMs ?? this.now())}`;
    for (const jobId of [...jobs]) this.deps.dispatcher.cancel(jobId, reason);
  }

  /** Cancels the jobs of every session that closed, whichever request or timer noticed it. */
  private async cancelJobsOfClosedSessions(): Promise<void> {
    for (const sessionId of [...this.sessionJobs.keys()]) {
      const session = await this.deps.store.getSession(sessionId, this.now());
      if (session && session.state !== 'active') this.cancelSessionJobs(session);
    }
  }

  /** A timer on the injected clock frees the board when the lease runs out, with no request needed. */
  private armExpiry(session: SessionRecord): void {
    if (this.closing) return;
    this.disarmExpiry(session.sessionId);
    const delayMs = Math.max(0, session.expiresAtMs - this.now());
    const handle = this.deps.clock.setTimeout(() => {
      this.expiryTimers.delete(session.sessionId);
      void this.reapExpired();
    }, delayMs);
    this.expiryTimers.set(session.sessionId, handle);
  }

  private disarmExpiry(sessionId: string): void {
    const handle = this.expiryTimers.get(sessionId);
    if (handle !== undefined) this.deps.clock.clearTimeout(handle);
    this.expiryTimers.delete(sessionId);
  }

  private async reapExpired(): Promise<void> {
    if (this.closing) return;
    try {
      for (const s of await this.deps.store.expireSessions(this.now())) {
        this.disarmExpiry(s.sessionId);
        const stopping = this.sessionJobs.has(s.sessionId) ? '; its jobs are cancelled and the board is free once they stop' : '; the board is free';
        this.deps.logger.info(`session ${s.sessionId} on ${s.board} expired${stopping}`);
      }
      await this.cancelJobsOfClosedSessions();
    } catch (err) {
      this.deps.logger.error('expiring sessions failed', err);
    }
  }

  // ---- jobs ---------------------------------------------------------------------------------

  async submitFlash(
    agent: AgentRecord,
    input: { board: string; firmware: UploadedFile; uartSeconds: number; session: string },
  ): Promise<JobBody> {
    const board = this.boardOr404(input.board);
    const { firmware } = input;
    let elf: ElfFile;
    try {
      elf = parseElf(firmware.bytes);
    } catch (err) {
      if (err instanceof ElfError) throw fieldValueError('firmware', `not a loadable ELF: ${err.message}`, firmware.filename);
      throw err;
    }
    const image: FirmwareImage = { bytes: firmware.bytes, sha256: firmware.sha256, elf };
    try {
      this.deps.checkImage(image, board);
    } catch (err) {
      if (err instanceof BackendError && err.kind === 'bad-image') {
        throw fieldValueError('firmware', `cannot run on ${board.id}: ${err.message}`, firmware.filename);
      }
      throw err;
    }
    await this.usableOr503(board.id);

    const nowMs = this.now();
    const job: JobRecord = {
      jobId: newId('job'),
      agentId: agent.agentId,
      board: board.id,
      sessionId: input.session === '' ? null : input.session,
      state: 'queued',
      firmware: { sha256: firmware.sha256, sizeBytes: firmware.sizeBytes, elf: elfSummary(elf) },
      uartSeconds: input.uartSeconds,
      uart: null,
      stop: null,
      failure: null,
      createdAtMs: nowMs,
      startedAtMs: null,
      runningAtMs: null,
      finishedAtMs: null,
      flashMs: null,
      runMs: null,
    };
    const result = await this.deps.store.createJob(job, { maxQueuedPerBoard: this.deps.limits.maxQueuedJobsPerBoard, nowMs });
    switch (result.kind) {
      case 'created':
        break;
      case 'session-not-found':
        throw new HttpError(404, `session ${input.session} not found`);
      case 'session-not-active':
        throw new HttpError(409, `session ${input.session} is ${result.session.state}, not active: open a new session`);
      case 'session-other-board':
        throw new HttpError(409, `session ${input.session} holds board ${result.session.board}, not ${input.board}`);
      case 'board-leased':
        throw await this.leasedConflict(result.lease, agent);
      case 'queue-full':
        throw new HttpError(
          429,
          `board ${input.board} already has ${result.queued} jobs waiting (the limit is ${this.deps.limits.maxQueuedJobsPerBoard}); retry after some finish`,
          { 'Retry-After': '5' },
        );
    }
    try {
      await this.deps.blobs.put(firmware.sha256, firmware.bytes);
    } catch (err) {
      this.deps.logger.error(`storing firmware ${firmware.sha256} failed`, err);
      await this.finishFailed(job.jobId, 'internal', 'the server could not store the firmware; try again');
      throw err;
    }
    this.launch(result.job, image);
    return jobBody(result.job);
  }

  async getJob(agent: AgentRecord, jobId: string): Promise<JobBody> {
    const job = await this.deps.store.getJob(jobId);
    if (!job || job.agentId !== agent.agentId) throw new HttpError(404, `job ${jobId} not found`);
    return jobBody(job);
  }

  /**
   * Hands a queued job to the dispatcher and records its outcome when it settles. The board's
   * availability is asked again when the job leaves the queue (`gatedBackend`): a job queued on a
   * board that went offline meanwhile fails as `unavailable` with the reason, it does not wait.
   * What the job prints is saved while it runs and kept whatever stops it (decision 0212): a
   * failed job (cancelled, deadline, backend failure) has the UART captured up to its failure;
   * at shutdown it is saved for the next start, which fails the job as `interrupted`.
   */
  private launch(job: JobRecord, image: FirmwareImage): void {
    const board = this.deps.boards.board(job.board);
    // The dispatcher starts the board's next job once this one's outcome is in the store (one job per board there).
    let markRecorded: () => void = () => undefined;
    const recorded = new Promise<void>((resolve) => (markRecorded = resolve));
    const run = async () => {
      if (!board) {
        await this.finishFailed(job.jobId, 'unavailable', `board ${job.board} is not in this server's catalog any more`);
        return;
      }
      const uart = new JobUartKeeper({
        jobId: job.jobId,
        clock: this.deps.clock,
        store: this.deps.store,
        logger: this.deps.logger,
        maxUartChunksPerJob: this.deps.limits.maxUartChunksPerJob,
      });
      // Dispatched at once (no await before it), so jobs keep their submission order.
      const gated = this.gatedBackend(board);
      let outcome: FirmwareRun;
      try {
        outcome = await this.deps.dispatcher.dispatch({
          jobId: job.jobId,
          board,
          backend: gated.backend,
          image,
          uartSeconds: job.uartSeconds,
          maxUartBytes: this.deps.limits.maxUartBytesPerJob,
          onPhase: (phase) => this.deps.store.markJobPhase(job.jobId, phase, this.now()),
          onUart: uart.onUart,
          recorded: () => recorded,
        });
      } catch (err) {
        await uart.stop();
        await this.afterJobOn(board.id, gated.used());
        if (this.closing) {
          await uart.saveAndStop();
          return;
        }
        if (err instanceof BackendError) {
          await this.finishFailed(job.jobId, err.kind, jobFailureDetail(err), uart.record());
        } else {
          this.deps.logger.error(`job ${job.jobId} failed unexpectedly`, err);
          await this.finishFailed(job.jobId, 'internal', 'the bench failed unexpectedly while running this job', uart.record());
        }
        return;
      }
      await uart.stop();
      await this.afterJobOn(board.id, gated.used());
      if (this.closing) return;
      await this.deps.store.finishJob(job.jobId, {
        state: 'done',
        nowMs: this.now(),
        uart: uartRecordOf(outcome, this.deps.limits.maxUartChunksPerJob),
        stop: outcome.stop,
        flashMs: outcome.flashMs,
        runMs: outcome.runMs,
      });
    };
    const { sessionId } = job;
    if (sessionId !== null) {
      const jobs = this.sessionJobs.get(sessionId) ?? new Set<string>();
      jobs.add(job.jobId);
      this.sessionJobs.set(sessionId, jobs);
    }
    const tracked = run()
      .catch((err: unknown) => this.deps.logger.error(`recording the outcome of job ${job.jobId} failed`, err))
      .finally(markRecorded)
      .then(() => this.rearmAfterJob(sessionId))
      .finally(() => {
        if (sessionId === null) return;
        const jobs = this.sessionJobs.get(sessionId);
        jobs?.delete(job.jobId);
        if (jobs?.size === 0) this.sessionJobs.delete(sessionId);
      });
    this.jobsInFlight.add(tracked);
    void tracked.finally(() => this.jobsInFlight.delete(tracked));
  }

  /**
   * The backend a queued job runs on: when the dispatcher opens the board, its availability is
   * asked again (cached as for listings) and an offline board fails the job with the reason.
   * With `--backend auto` the job runs on whichever backend serves the board at that moment.
   */
  private gatedBackend(board: Board): { backend: Backend; used: () => Backend | undefined } {
    let used: Backend | undefined;
    const live = this.deps.boards;
    const current = async (): Promise<Backend> => {
      // A job accepted just as an administrator started a health check waits for the check to
      // end (the board is the check's until then), then sees the board as the check left it.
      await this.healthChecks.get(board.id)?.done;
      const now = await live.get(board.id);
      if (!now.backend) throw new BackendError('unavailable', `board ${board.id} is offline: ${now.offlineReason ?? 'no backend'}`);
      return now.backend;
    };
    const backend: Backend = {
      // Named after the backend that ran it, or that serves the board as far as we know yet
      // (the dispatcher names it in timeout messages).
      get name() {
        return (used ?? live.lastKnown(board.id)?.backend)?.name ?? 'mock';
      },
      availability: async (b) => (await current()).availability(b),
      open: async (b, options) => {
        used = await current();
        return used.open(b, options);
      },
      // The job deadline is set before the board is opened: from the backend serving the board now.
      jobBudgetMs: (b) => (used ?? live.lastKnown(board.id)?.backend)?.jobBudgetMs?.(b) ?? { flashMs: 0, resetMs: 0 },
    };
    return { backend, used: () => used };
  }

  /**
   * A backend that keeps board health may just have counted a failure or quarantined the board:
   * its availability is asked again now (not after the cache window), so listings show it at
   * once and the operator's log says so when it happens. The check never rejects.
   */
  private async afterJobOn(boardId: string, backend: Backend | undefined): Promise<void> {
    if (!backend || !boardHealthControlOf(backend)) return;
    this.deps.boards.invalidate(boardId);
    await this.deps.boards.get(boardId);
  }

  private async finishFailed(
    jobId: string,
    kind: NonNullable<JobRecord['failure']>['kind'],
    message: string,
    uart: UartRecord | null = null,
  ): Promise<void> {
    await this.deps.store.finishJob(jobId, { state: 'failed', nowMs: this.now(), failure: { kind, message }, uart });
  }

  /**
   * A job of `sessionId` settled: the store renewed the session from then (its jobs kept it alive
   * while they ran, decision 0211), so its expiry timer is armed again for the new `expires_at`.
   * An expiry timer that fired while the job ran found the session in use and left it active.
   */
  private async rearmAfterJob(sessionId: string | null): Promise<void> {
    if (sessionId === null || this.closing) return;
    try {
      const session = await this.deps.store.getSession(sessionId, this.now());
      if (session?.state === 'active') this.armExpiry(session);
    } catch (err) {
      this.deps.logger.error(`re-arming the expiry of session ${sessionId} after its job settled failed`, err);
    }
  }

  /** Waits until no job is in flight (tests and orderly shutdown). */
  async idle(): Promise<void> {
    while (this.jobsInFlight.size > 0) await Promise.all([...this.jobsInFlight]);
  }

  // ---- boards, health, stats, admin -----------------------------------------------------------

  /** Every board as it stands now; the board list, snapshot, stats and admin view are projections of it. */
  private async boardStates(): Promise<BoardState[]> {
    const boards = await this.deps.boards.all();
    const leases = new Map((await this.deps.store.listLeases(this.now())).map((l) => [l.board, l]));
    const activity = await this.deps.store.boardActivity();
    return boards.map((resolved) =>
      boardState(resolved, leases.get(resolved.board.id), activity.get(resolved.board.id), this.healthChecks.has(resolved.board.id)),
    );
  }

  async listBoards(): Promise<BoardBody[]> {
    return (await this.boardStates()).map(boardBody);
  }

  async health(): Promise<HealthBody> {
    let database: 'ok' | 'error' = 'ok';
    try {
      await this.deps.store.ping();
    } catch (err) {
      database = 'error';
      this.deps.logger.error('health check: the database did not answer', err);
    }
    const boards = await this.deps.boards.all();
    const online = boards.filter((b) => b.backend).length;
    const offline = boards.length - online;
    return {
      status: database === 'ok' && (online > 0 || boards.length === 0) ? 'ok' : 'degraded',
      version: BENCH_API_VERSION,
      uptime_seconds: (this.now() - this.startedAtMs) / 1000,
      boards: { online, offline },
      database,
    };
  }

  /** The read-only view model of the pages and `GET /api/v1/stats`. */
  async getSnapshot(): Promise<BenchSnapshot> {
    const states = await this.boardStates();
    const counts = await this.deps.store.counts(this.now());
    const recent = await this.deps.store.recentJobs(20);
    return {
      generatedAt: isoFromMs(this.now()),
      version: BENCH_API_VERSION,
      boards: states.map(snapshotBoard),
      recentActivity: recent.map((j) => ({
        // A short prefix: enough to tell jobs apart on a public page, useless for fetching one.
        jobId: j.jobId.slice(0, 12),
        board: j.board,
        agentLabel: j.agentLabel,
        state: j.state,
        at: isoFromMs(j.finishedAtMs ?? j.startedAtMs ?? j.createdAtMs),
      })),
      totals: {
        agents: counts.agents,
        sessionsOpen: counts.sessionsOpen,
        jobsTotal: counts.jobsTotal,
        jobsByState: counts.jobsByState,
        waitlist: this.deps.waitlistCount(),
      },
    };
  }

  async stats(): Promise<StatsBody> {
    return statsBody(await this.getSnapshot());
  }

  async admin(): Promise<AdminBody> {
    const states = await this.boardStates();
    const sessions = await this.deps.store.listActiveSessions(this.now());
    const counts = await this.deps.store.counts(this.now());
    const health = await Promise.all(states.map(({ resolved }) => this.boardHealth(resolved.board.id)));
    return {
      generated_at: isoFromMs(this.now()),
      boards: states.map((state, i) => adminBoard(state, health[i] ?? null)),
      sessions: sessions.map(adminSession),
      recent_jobs: (await this.deps.store.recentJobs(50)).map(adminJob),
      recent_failures: (await this.deps.store.recentFailures(20)).map(adminJob),
      counts: {
        agents: counts.agents,
        sessions_open: counts.sessionsOpen,
        jobs_total: counts.jobsTotal,
        jobs_by_state: counts.jobsByState,
        waitlist: this.deps.waitlistCount(),
      },
    };
  }

  // ---- board health (administrator) ---------------------------------------------------------

  /** The health `boardId`'s backend keeps, or null when no backend of this board keeps any. Never throws. */
  private async boardHealth(boardId: string): Promise<BoardHealthBody | null> {
    const keeper = this.deps.boards.healthControl(boardId);
    if (!keeper) return null;
    try {
      return healthBody(keeper.name, await keeper.control.health(boardId));
    } catch (err) {
      this.deps.logger.error(`reading the health of board ${boardId} from the ${keeper.name} backend failed`, err);
      return null;
    }
  }

  /** 404 for an unknown board, 409 when none of its backends keeps board health. */
  private healthKeeperOr409(boardId: string, action: string) {
    const board = this.boardOr404(boardId);
    const keeper = this.deps.boards.healthControl(board.id);
    if (!keeper) {
      const running = this.deps.boards.lastKnown(board.id)?.backendName;
      // With `auto` and nothing usable the name is "none": name the board's backends instead.
      const which = running && running !== 'none' ? `its backend (${running}) keeps` : `its backends (${Object.keys(board.backends).join(', ')}) keep`;
      throw new HttpError(409, `cannot ${action} board ${board.id}: ${which} no board health and never quarantine it`);
    }
    return keeper;
  }

  /** Status, reason and health right after an administrator changed the board's health. */
  private async freshBoardView(
    boardId: string,
    keeper: { name: string; control: BoardHealthControl },
  ): Promise<Pick<BoardReleaseBody, 'status' | 'offline_reason' | 'health'>> {
    this.deps.boards.invalidate(boardId);
    const state = (await this.boardStates()).find((s) => s.resolved.board.id === boardId)!;
    // Read directly: if the backend cannot say, the administrator gets a 500 (logged), not a guess.
    const health = healthBody(keeper.name, await keeper.control.health(boardId));
    return { status: state.status, offline_reason: state.resolved.offlineReason, health };
  }

  /**
   * `POST /admin/boards/{board}/release`: an administrator puts a quarantined board back in
   * service (idempotent: releasing a healthy board resets its failure count).
   */
  async releaseBoard(boardId: string): Promise<BoardReleaseBody> {
    const keeper = this.healthKeeperOr409(boardId, 'release');
    try {
      await keeper.control.release(boardId);
    } catch (err) {
      if (err instanceof BackendError) throw new HttpError(409, `cannot release board ${boardId}: ${err.message}`);
      throw err;
    }
    this.deps.logger.info(`board ${boardId} released by an administrator`);
    return { board: boardId, ...(await this.freshBoardView(boardId, keeper)) };
  }

  /**
   * `POST /admin/boards/{board}/health-check`: runs the board's health-check firmware (passing
   * releases the board). 409 when the backend has no health check, the board is leased or has
   * jobs, or a check is already running; one check per board at a time, and while it runs the
   * board refuses sessions and jobs (409) and is listed `busy` unless offline.
   */
  async healthCheckBoard(boardId: string): Promise<BoardHealthCheckBody> {
    const keeper = this.healthKeeperOr409(boardId, 'health-check');
    const healthCheck = keeper.control.healthCheck?.bind(keeper.control);
    if (!healthCheck) throw new HttpError(409, `cannot health-check board ${boardId}: the ${keeper.name} backend has no health-check run`);
    const running = this.healthChecks.get(boardId);
    if (running) throw new HttpError(409, `board ${boardId} is already running a health check started at ${isoFromMs(running.startedAtMs)}`);
    // Claimed before the first await, so two administrators cannot start two checks.
    let unclaim!: () => void;
    const done = new Promise<void>((resolve) => (unclaim = resolve));
    this.healthChecks.set(boardId, { startedAtMs: this.now(), done });
    const unclaimBoard = () => {
      // Only our own claim: a later check may hold the board by the time this runs again.
      if (this.healthChecks.get(boardId)?.done === done) this.healthChecks.delete(boardId);
      unclaim();
    };
    let stillRunning: Promise<unknown> | undefined;
    try {
      const lease = (await this.deps.store.listLeases(this.now())).find((l) => l.board === boardId);
      const activity = (await this.deps.store.boardActivity()).get(boardId) ?? { queued: 0, active: 0 };
      if (lease || activity.active > 0 || activity.queued > 0) {
        const holder = lease ? `is leased by agent "${lease.agentLabel}"` : `has ${activity.active + activity.queued} job(s) running or waiting`;
        throw new HttpError(409, `cannot health-check board ${boardId}: it ${holder}; a health check needs the board to itself`);
      }
      const run = await runHealthCheck({
        boardId,
        backendName: keeper.name,
        healthCheck,
        clock: this.deps.clock,
        timeoutMs: this.deps.healthCheckTimeoutMs ?? DEFAULT_HEALTH_CHECK_TIMEOUT_MS,
      });
      stillRunning = run.stillRunning;
      const { outcome } = run;
      // The answer shows the board as it is now: unclaimed, unless the backend ignored its abort.
      if (!stillRunning) unclaimBoard();
      this.deps.logger.info(`health check on board ${boardId}: ${outcome.passed ? 'passed, board released' : `failed: ${outcome.reason}`}`);
      return {
        board: boardId,
        passed: outcome.passed,
        reason: outcome.passed ? null : outcome.reason,
        uart_text: outcome.uartText,
        elapsed_seconds: outcome.passed ? outcome.elapsedNanos / NANOS_PER_SECOND : null,
        ...(await this.freshBoardView(boardId, keeper)),
      };
    } finally {
      // A backend that ignored its abort keeps the board claimed until it really lets go.
      if (stillRunning) void stillRunning.finally(unclaimBoard);
      else unclaimBoard();
    }
  }

}

function notActive(session: SessionRecord, action: string): HttpError {
  const when = session.endedAtMs === null ? '' : ` at ${isoFromMs(session.endedAtMs)}`;
  return new HttpError(409, `cannot ${action} session ${session.sessionId}: it is ${session.state}${when}, not active`);
}

function elfSummary(elf: ElfFile): ElfSummary {
  return {
    machine: elf.machine,
    machineName: machineName(elf.machine),
    entry: elf.entry,
    segments: loadableSegments(elf).map((s) => ({ paddr: s.paddr, vaddr: s.vaddr, fileSizeBytes: s.fileSizeBytes, memSizeBytes: s.memSizeBytes })),
  };
}
