import { type Clock, isoFromMs, type TimerHandle } from '../../../core/clock.js';
import type { Logger } from '../../http/logger.js';
import type { AgentRecord, BenchStore, LeaseWithAgent, SessionRecord } from '../../storage/bench/bench-store.js';
import { DatabaseUnavailableError } from '../../storage/storage-faults.js';
import { SessionQueue } from './session-queue.js';
import { newId } from './bench-deps.js';
import { BenchError } from './bench-errors.js';
import type { WorkerGateway } from '../workers/worker-gateway.js';
import type { BoardAccess } from './board-access.js';
import type { AgentLongPolls } from './agent-long-polls.js';

/** How a session request waits for a busy board (`wait_seconds`). */
export interface SessionWait {
  seconds: number;
  /** Aborts when the request's client went away. */
  signal: AbortSignal;
  /**
   * Settles once what the request's connection already reported has been heard (a client that
   * left), before a grant from the queue is answered; the check of `signal` follows it.
   */
  beforeAnswer?: () => Promise<void>;
}

/**
 * Sessions: exclusive board leases kept alive by heartbeats, freed by a timer on the injected
 * clock when they run out, and the jobs of each session, cancelled when it closes.
 */
export class SessionLeases {
  private readonly expiryTimers = new Map<string, TimerHandle>();
  private closing = false;
  /** The expiry sweeps the timers started, one after another. */
  private reaping: Promise<void> = Promise.resolve();

  private readonly queue: SessionQueue;

  constructor(
    private readonly deps: { clock: Clock; store: BenchStore; gateway: WorkerGateway; logger: Logger; access: BoardAccess; longPolls: AgentLongPolls },
  ) {
    this.queue = new SessionQueue({ clock: deps.clock, store: deps.store.sessionQueue, logger: deps.logger });
  }

  private now(): number {
    return this.deps.clock.nowMs();
  }

  /** After a (re)start: an expiry timer for every session still active. */
  async armAll(): Promise<void> {
    for (const session of await this.deps.store.listActiveSessions(this.now())) this.armExpiry(session);
  }

  /** Settles once the expiry sweeps started by timers so far have finished (tests on a fake clock). */
  async expirySettled(): Promise<void> {
    let seen: Promise<void> | undefined;
    while (seen !== this.reaping) {
      seen = this.reaping;
      await seen;
    }
  }

  /** Stops every expiry timer; none is armed again. */
  close(): void {
    this.closing = true;
    this.queue.close();
    for (const handle of this.expiryTimers.values()) this.deps.clock.clearTimeout(handle);
    this.expiryTimers.clear();
  }

  /**
   * Opens a session on `boardId`. With `wait`, a board held by someone else puts the caller in the
   * board's queue (first come first served) until the lease is granted or the wait runs out; then
   * the 409 says the caller's place in the queue and who holds the board until when.
   */
  async openSession(agent: AgentRecord, boardId: string, idleSeconds: number, wait?: SessionWait): Promise<SessionRecord> {
    const { access } = this.deps;
    // `boardId` names a pool (any free instance) or one instance of it (decision 0510).
    const target = await access.target(boardId);
    const pool = target.board.id;
    await access.usable(pool);
    // A session that expired without its timer having fired yet: its jobs stop before anyone else's lease.
    await this.cancelJobsOfClosedSessions();
    // One session id for every try of this request: a try whose COMMIT went through but whose
    // answer was lost (the database restarting at that moment) fails as DatabaseUnavailableError,
    // and the session queue tries again after it. The next try first looks for that session, so
    // the request answers the session it opened instead of opening a second one (or waiting
    // behind its own).
    let sessionId = newId('ses');
    let answerLost = false;
    /** The session a try stored although its answer was lost, while it is still this agent's and active. */
    const storedBefore = async (): Promise<SessionRecord | undefined> => {
      const opened = await this.deps.store.getSession(sessionId, this.now());
      if (opened?.state === 'active' && opened.agentId === agent.agentId) return opened;
      // Not opened after all, or ended since: a fresh id keeps the tries apart.
      if (opened) sessionId = newId('ses');
      answerLost = false;
      return undefined;
    };
    /** One try; `except`: instances left to earlier waiters in the pool's line (decision 1030). */
    const attempt = async (except: ReadonlySet<string> = new Set()): Promise<{ session?: SessionRecord; lease?: LeaseWithAgent }> => {
      const stored = answerLost ? await storedBefore() : undefined;
      if (stored) return { session: stored };
      const instances = target.instance === undefined ? (await access.handOut(pool)).filter((i) => !except.has(i)) : undefined;
      // Every instance free now is left to earlier waiters: this try takes nothing.
      if (instances?.length === 0) return { lease: await this.currentLease(pool, pool) };
      const nowMs = this.now();
      const result = await this.deps.store.openSession({
        sessionId,
        agentId: agent.agentId,
        board: pool,
        ...(target.instance === undefined ? {} : { instance: target.instance }),
        state: 'active',
        idleSeconds,
        createdAtMs: nowMs,
        expiresAtMs: nowMs + Math.round(idleSeconds * 1000),
        endedAtMs: null,
        lastHeartbeatAtMs: null,
      }, { instances }).catch((err: unknown) => {
        // Only a lost connection leaves it open whether the session was stored.
        answerLost = err instanceof DatabaseUnavailableError;
        throw err;
      });
      answerLost = false;
      return result.kind === 'opened' ? { session: result.session } : { lease: result.lease };
    };
    // A try that is not followed by another (the first, when the pool is free; the last, when the
    // wait runs out) looks once more after the fault's Retry-After before its 503 leaves: the
    // client's retry would get a new id and find its own lease.
    const storedDespiteFault = async (err: unknown): Promise<SessionRecord> => {
      if (!(err instanceof DatabaseUnavailableError) || !answerLost) throw err;
      await new Promise<void>((resolve) => this.deps.clock.setTimeout(resolve, err.retryAfterSeconds * 1000));
      const stored = await storedBefore().catch(() => undefined);
      if (stored) return stored;
      throw err;
    };
    // The session queue is one line per pool, each waiter for the pool or one instance asked for
    // by id (decisions 0510, 1030), in the store across replicas (decision 0555). A waiting request
    // first tries only for what no waiter already in the line accepts (nothing, behind a waiter
    // for the pool or its instance): first come first served.
    const queue = { queue: target.instance ?? pool, pool };
    const open = wait !== undefined && wait.seconds > 0 ? await this.queue.openToNewcomer(queue) : { except: new Set<string>() };
    let outcome: { session?: SessionRecord; lease?: LeaseWithAgent } =
      open === undefined ? { lease: await this.currentLease(queue.queue, pool) } : await attempt(open.except).catch(async (err: unknown) => ({ session: await storedDespiteFault(err) }));
    // The caller's own flash job is waited for as anyone's is (a one-shot run right after another,
    // issue 31). So is its own session on a pool of several instances: a CI pipeline's parallel
    // jobs share one token, and each waits for the next free instance (issue 27). On a pool of one
    // (or an instance asked for by id) the caller's own session is answered at once, as before.
    const sharedPool = target.instance === undefined && (await access.handOut(pool)).length > 1;
    const waitable = (lease: LeaseWithAgent | undefined) => lease === undefined || lease.agentId !== agent.agentId || lease.holder.kind === 'job' || sharedPool;
    if (!outcome.session && wait && wait.seconds > 0 && waitable(outcome.lease)) {
      let lastLease = outcome.lease;
      // Waiting in the queue holds the request open: one of the agent's long polls (decision 0471).
      const waited = await this.deps.longPolls.run(agent, () => this.queue.wait(queue, agent.agentId, {
        waitMs: Math.round(wait.seconds * 1000),
        signal: wait.signal,
        attempt: async (except) => {
          const tried = await attempt(except);
          if (tried.lease) lastLease = tried.lease;
          return tried.session;
        },
      }).catch(async (err: unknown) => ({ value: await storedDespiteFault(err), position: 1 })));
      if (!waited.value) {
        lastLease ??= await this.currentLease(queue.queue, pool);
        const conflict = lastLease ? await access.leasedConflict(lastLease, agent) : { detail: `board ${boardId} is busy`, extra: {} };
        throw new BenchError('board_leased', `${conflict.detail}; you were number ${waited.position} in the queue for ${boardId} when your wait of ${wait.seconds} s ran out`, conflict.extra);
      }
      outcome = { session: waited.value };
      await wait.beforeAnswer?.();
    }
    if (!outcome.session) throw await this.refusal(outcome.lease, boardId, agent);
    // Granted while the client was going away (its abort came during the try): nobody would use
    // the session, which would hold the board for its idle time. It ends now, the way any session
    // ends, so the lease frees and the next waiter is woken by the store's event at once.
    if (wait?.signal.aborted) {
      await this.endSession(agent, outcome.session.sessionId).catch((err: unknown) =>
        this.deps.logger.warn(`ending session ${outcome.session?.sessionId ?? ''}, granted after its client went away, failed (${(err as Error).message}); it expires after its idle time`),
      );
      throw new BenchError('board_leased', `your request for ${boardId} went away before its session ${outcome.session.sessionId} was answered; that session was ended`);
    }
    this.armExpiry(outcome.session);
    return outcome.session;
  }

  /**
   * The session line of the pool `boardId` names (a pool, or one instance of it, decision 1030) on
   * every replica: how many wait for the pool or any of its instances, and the place (1-based) in
   * that line of the caller's first waiter (for that instance, when an instance is named);
   * `board_not_found` for neither.
   */
  async queueOf(boardId: string, agentId: string): Promise<{ board: string; waiting: number; position: number | null }> {
    const instance = await this.deps.access.instanceNamed(boardId);
    const pool = instance?.board.id ?? this.deps.access.knownBoard(boardId).id;
    return { board: instance ? boardId : pool, ...(await this.queue.lineOf(pool, agentId, instance ? boardId : undefined)) };
  }

  /** The lease on `queue` (an instance) or on `pool`'s instances that frees first; undefined when none is held. */
  private async currentLease(queue: string, pool: string): Promise<LeaseWithAgent | undefined> {
    const leases = (await this.deps.store.listLeases(this.now())).filter((l) => (queue === pool ? l.board === pool : (l.instance ?? l.board) === queue));
    const freesAt = (l: LeaseWithAgent) => l.expiresAtMs ?? Number.POSITIVE_INFINITY;
    return leases.reduce<LeaseWithAgent | undefined>((best, l) => (best === undefined || freesAt(l) < freesAt(best) ? l : best), undefined);
  }

  /** The 409 of a session request refused at once: who holds the board, or that it is busy. */
  private async refusal(lease: LeaseWithAgent | undefined, boardId: string, agent: AgentRecord): Promise<BenchError> {
    if (lease) return this.deps.access.leasedConflict(lease, agent);
    return new BenchError('board_leased', `board ${boardId} is busy`);
  }

  /** Something in this process may have freed a board (a job ended): the queues try again. */
  boardMayBeFree(): void {
    this.queue.nudge();
  }

  private async ownSession(agent: AgentRecord, sessionId: string): Promise<SessionRecord> {
    const session = await this.deps.store.getSession(sessionId, this.now());
    // Another agent's session is answered exactly like a missing one: existence is not revealed.
    if (!session || session.agentId !== agent.agentId) throw new BenchError('session_not_found', `session ${sessionId} not found`);
    return session;
  }

  getSession(agent: AgentRecord, sessionId: string): Promise<SessionRecord> {
    return this.ownSession(agent, sessionId);
  }

  /** Renews the caller's active session; `action` names what the caller asked for in a refusal (arming a debugger renews it too). */
  async heartbeat(agent: AgentRecord, sessionId: string, action = 'heartbeat'): Promise<SessionRecord> {
    await this.ownSession(agent, sessionId);
    const result = await this.deps.store.heartbeatSession(sessionId, this.now());
    if (result.kind === 'not-found') throw new BenchError('session_not_found', `session ${sessionId} not found`);
    if (result.kind === 'not-active') throw notActive(result.session, action);
    this.armExpiry(result.session);
    return result.session;
  }

  async endSession(agent: AgentRecord, sessionId: string): Promise<SessionRecord> {
    await this.ownSession(agent, sessionId);
    const result = await this.deps.store.endSession(sessionId, this.now());
    if (result.kind === 'not-found') throw new BenchError('session_not_found', `session ${sessionId} not found`);
    if (result.kind === 'not-active') throw notActive(result.session, 'end');
    this.disarmExpiry(sessionId);
    this.cancelSessionJobs(result.session);
    this.queue.nudge();
    return result.session;
  }

  /**
   * Tells the workers running jobs of a session that ended or expired to stop them now (the
   * store already failed its queued ones, passed the lease to the running one and recorded why
   * it must stop; a remote worker hears it on its next claim renewal). The job fails as
   * `cancelled` and frees the board once its worker has stopped it.
   */
  private cancelSessionJobs(session: SessionRecord): void {
    const reason = `session ${session.sessionId} ${session.state} at ${isoFromMs(session.endedAtMs ?? this.now())}`;
    this.deps.gateway.sessionClosed(session.sessionId, reason);
  }

  /** Stops the jobs of every session that closed, whichever request or timer noticed it. */
  private async cancelJobsOfClosedSessions(): Promise<void> {
    await this.deps.gateway.pushStoredCancels();
  }

  /** A timer on the injected clock frees the board when the lease runs out, with no request needed. */
  private armExpiry(session: SessionRecord): void {
    if (this.closing) return;
    this.disarmExpiry(session.sessionId);
    const delayMs = Math.max(0, session.expiresAtMs - this.now());
    const handle = this.deps.clock.setTimeout(() => {
      this.expiryTimers.delete(session.sessionId);
      this.reaping = this.reaping.then(() => this.reapExpired());
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
        const stopping = this.deps.gateway.runsJobsOf(s.sessionId) ? '; its jobs are cancelled and the board is free once they stop' : '; the board is free';
        this.deps.logger.info(`session ${s.sessionId} on ${s.board} expired${stopping}`);
      }
      await this.cancelJobsOfClosedSessions();
      this.queue.nudge();
    } catch (err) {
      this.deps.logger.error('expiring sessions failed', err);
    }
  }

  /**
   * A job of `sessionId` settled: the store renewed the session from then (its jobs kept it alive
   * while they ran, decision 0211), so its expiry timer is armed again for the new `expires_at`.
   * An expiry timer that fired while the job ran found the session in use and left it active.
   */
  async rearmAfterJob(sessionId: string | null): Promise<void> {
    if (sessionId === null || this.closing) return;
    try {
      const session = await this.deps.store.getSession(sessionId, this.now());
      if (session?.state === 'active') this.armExpiry(session);
    } catch (err) {
      this.deps.logger.error(`re-arming the expiry of session ${sessionId} after its job settled failed`, err);
    }
  }
}

function notActive(session: SessionRecord, action: string): BenchError {
  const when = session.endedAtMs === null ? '' : ` at ${isoFromMs(session.endedAtMs)}`;
  return new BenchError('session_not_active', `cannot ${action} session ${session.sessionId}: it is ${session.state}${when}, not active`);
}
