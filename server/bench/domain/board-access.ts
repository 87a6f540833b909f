import type { Board } from '../../../boards/board-schema.js';
import { type Clock, isoFromMs } from '../../../core/clock.js';
import type { AgentRecord, BenchStore, JobRecord, LeaseWithAgent } from '../../storage/bench/bench-store.js';
import { BenchError } from './bench-errors.js';
import type { ResolvedBoard } from '../../../harness/board-resolution.js';
import { type BoardState, boardState, poolStatus, poolView } from './board-state.js';
import type { LiveBoards } from './live-boards.js';
import { closestNames } from '../../../core/closest-names.js';
import { boardOfInstance, type PoolInstance, type PoolInstances } from './pool-instances.js';

/** A board running an administrator's health check: when it started (host ms), and its end. */
export interface HealthCheckClaim {
  startedAtMs: number;
  done: Promise<void>;
}

/**
 * Who may use a board now, shared by sessions, jobs and board-health administration: the board
 * catalog, its live availability, the health checks that hold boards, and why a leased board
 * is refused.
 */
export class BoardAccess {
  /** Boards running an administrator's health check (one at a time per board). */
  readonly healthChecks = new Map<string, HealthCheckClaim>();

  constructor(
    private readonly deps: {
      clock: Clock;
      store: BenchStore;
      boards: LiveBoards;
      jobDeadlineMs?: (uartSeconds: number, boardId: string) => number;
      pools?: PoolInstances;
    },
  ) {}

  /** The pools' instances (decision 0510), when the service has workers reporting them. */
  get pools(): PoolInstances | undefined {
    return this.deps.pools;
  }

  /**
   * What a request's `board` names (decision 0510): a board (its pool: any free instance), or one
   * instance of a pool asked for explicitly. An instance no worker reports is `board_not_found`
   * naming the pool's instances.
   */
  async target(name: string): Promise<{ board: Board; instance?: string }> {
    const found = await this.instanceNamed(name);
    if (!found) return { board: this.knownBoard(name) };
    const { board, asked } = found;
    // Quarantined (decision 0551): offline until an administrator releases it; the pool serves on.
    if (asked.quarantine) {
      throw new BenchError(
        'board_offline',
        `instance ${name} of board ${board.id} is offline: ${asked.quarantine.reason}; ask for "${board.id}" (any free instance), or an administrator releases it (POST /admin/boards/${name}/release)`,
      );
    }
    return { board, instance: name };
  }

  /**
   * The instance of a pool of several that `name` names, as its workers report it (quarantined or
   * not); undefined when `name` is a board or spells no instance; `board_not_found` naming the
   * pool's instances when it spells one of a board here that no worker reports.
   */
  async instanceNamed(name: string): Promise<{ board: Board; asked: PoolInstance } | undefined> {
    if (this.deps.boards.board(name) || !this.deps.pools) return undefined;
    // Spelled like an instance of a pool here but with a number no worker gives (pico.0@local,
    // pico.01@local, pico.-1@local): answered as any instance not found, naming the pool's instances.
    const poolId = boardOfInstance(name) ?? /^([a-z0-9][a-z0-9-]*)\.[^\s@]*@[^\s@]+$/.exec(name)?.[1];
    const board = poolId === undefined ? undefined : this.deps.boards.board(poolId);
    if (!board) return undefined;
    const pool = await this.deps.pools.of(board.id);
    const instances = pool.map((i) => i.instance);
    const asked = pool.find((i) => i.instance === name);
    if (!asked) {
      throw new BenchError(
        'board_not_found',
        `instance "${name}" of board ${board.id} not found; the instances of ${board.id} here: ${instances.join(', ') || 'none'} (or ask for "${board.id}": any free one)`,
      );
    }
    return { board, asked };
  }

  /** The instances of `boardId`'s pool to hand out now, in order (decision 0510); the board itself without pools. */
  async handOut(boardId: string): Promise<string[]> {
    return this.deps.pools ? this.deps.pools.handOut(boardId) : [boardId];
  }

  private now(): number {
    return this.deps.clock.nowMs();
  }

  /** The board of this server called `boardId`; `board_not_found` (naming the boards here) otherwise. */
  knownBoard(boardId: string): Board {
    const board = this.deps.boards.board(boardId);
    if (!board) {
      const near = closestNames(boardId, this.deps.boards.ids);
      const hint = near.length > 0 ? `; did you mean ${near.map((n) => `"${n}"`).join(' or ')}?` : '';
      throw new BenchError('board_not_found', `board "${boardId}" not found${hint}; boards here: ${this.deps.boards.ids.join(', ') || 'none'}`);
    }
    return board;
  }

  /**
   * The board's backend as of now (availability cached briefly, live-boards.ts): `board_offline`
   * with the reason when it cannot run, `board_health_check_running` while an administrator's
   * health check holds it.
   */
  async usable(boardId: string, options: { storeRefusesChecked?: boolean } = {}): Promise<ResolvedBoard> {
    const resolved = await this.deps.boards.get(boardId);
    if (!resolved.backend) throw new BenchError('board_offline', `board ${boardId} is offline: ${resolved.offlineReason ?? 'no backend'}`);
    // Started through this process, or (a board on a worker) through any replica: the store says,
    // here or, for a job, in the write that queues it (`storeRefusesChecked`, decision 0860).
    const startedAtMs =
      this.healthChecks.get(boardId)?.startedAtMs ?? (options.storeRefusesChecked ? undefined : (await this.deps.store.healthChecks.active()).find((c) => c.board === boardId)?.requestedAtMs);
    if (startedAtMs !== undefined) throw healthCheckRunning(boardId, startedAtMs);
    return resolved;
  }

  /**
   * `board_leased` for a board someone holds: who (label only) and until when, with a retry
   * time. A board held by a job (its own lease, or a closed session's job still stopping) is
   * free at the latest at that job's deadline: from when it left the queue (or now, while it
   * waits) plus the dispatcher's budget for it.
   */
  async leasedConflict(lease: LeaseWithAgent, agent: AgentRecord): Promise<BenchError> {
    const who = lease.agentId === agent.agentId ? 'you' : `agent "${lease.agentLabel}"`;
    // An instance of a larger pool is named as such (decision 0510); a pool of one reads as before.
    const name = lease.instance === undefined ? `board ${lease.board}` : `instance ${lease.instance} of board ${lease.board}`;
    if (lease.holder.kind === 'job') {
      const job = await this.deps.store.getJob(lease.holder.jobId);
      const nowMs = this.now();
      const budgetMs = job && this.deps.jobDeadlineMs ? this.deps.jobDeadlineMs(job.uartSeconds, job.board) : undefined;
      if (job === undefined || budgetMs === undefined) {
        return new BenchError('board_leased', `${name} is busy: ${who} leased it for a flash job, until that job finishes (retry_after_seconds=5)`, {
          retryAfterSeconds: 5,
        });
      }
      const deadlineMs = (job.startedAtMs ?? nowMs) + budgetMs;
      // Retry-After is the expected end (issue 31): the deadline budgets a 60 s flash and a slow
      // simulator, so it said 90 s for a job that ends in 2.
      const expectedMs = Math.min(deadlineMs, expectedJobEndMs(job, nowMs));
      const retryAfterSeconds = Math.max(1, Math.ceil((expectedMs - nowMs) / 1000));
      return new BenchError(
        'board_leased',
        `${name} is busy: ${who} leased it for a flash job, until that job finishes, expected in about ${retryAfterSeconds} s (its capture window), ` +
          `at the latest ${isoFromMs(deadlineMs)} (its deadline) (retry_after_seconds=${retryAfterSeconds})`,
        { retryAfterSeconds },
      );
    }
    if (lease.expiresAtMs === null) throw new Error(`the session lease on ${lease.board} has no expiry`);
    const retryAfterSeconds = Math.max(1, Math.ceil((lease.expiresAtMs - this.now()) / 1000));
    const until = `until ${isoFromMs(lease.expiresAtMs)} unless renewed (retry_after_seconds=${retryAfterSeconds})`;
    const detail =
      lease.agentId === agent.agentId
        ? `${name} is already leased by you (${lease.instance === undefined ? 'one lease per board' : `one lease per instance; with wait_seconds, a request for board ${lease.board} waits for its next free instance`}) in session ${lease.holder.sessionId} ${until}; ` +
          `send session=${lease.holder.sessionId} with the flash job, or end that session`
        : `${name} is leased by ${who} ${until}`;
    return new BenchError('board_leased', detail, { retryAfterSeconds });
  }

  /** Every board as it stands now; the board list, snapshot, stats and admin view are projections of it. */
  async boardStates(): Promise<BoardState[]> {
    const boards = await this.deps.boards.all();
    const allLeases = await this.deps.store.listLeases(this.now());
    const leases = new Map(allLeases.map((l) => [l.board, l]));
    const activity = await this.deps.store.boardActivity();
    const checking = new Set([...this.healthChecks.keys(), ...(await this.deps.store.healthChecks.active()).map((c) => c.board)]);
    const states = boards.map((resolved) => boardState(resolved, leases.get(resolved.board.id), activity.get(resolved.board.id), checking.has(resolved.board.id)));
    if (!this.deps.pools) return states;
    // Pools of several instances (decision 0510): counted per instance, the board's status from theirs.
    const byInstance = new Map(allLeases.map((l) => [l.instance ?? l.board, l]));
    const perInstance = await this.deps.store.instanceActivity();
    // An instance under an administrator's health check (decision 0606) is busy.
    for (const id of checking) if (id.includes('@')) perInstance.set(id, { queued: perInstance.get(id)?.queued ?? 0, active: (perInstance.get(id)?.active ?? 0) + 1 });
    return Promise.all(
      states.map(async (state) => {
        const instances = await this.deps.pools!.of(state.resolved.board.id);
        if (instances.length <= 1) return state;
        const pool = poolView(instances, byInstance, perInstance);
        // An administrator's health check holds the whole board.
        const status = checking.has(state.resolved.board.id) ? state.status : poolStatus(pool, state.status);
        // Offline because every instance is (quarantined, say) while the board's backend is fine: say why.
        const resolved =
          status === 'offline' && state.resolved.offlineReason === null
            ? { ...state.resolved, offlineReason: `every instance is offline: ${pool.instances.map((i) => `${i.instance}: ${i.offlineReason}`).join('; ')}` }
            : state.resolved;
        return { ...state, resolved, pool, status, lease: status === 'leased' ? state.lease : undefined };
      }),
    );
  }
}

/** `board_health_check_running`: an administrator's health check, started at `startedAtMs`, holds the board. */
export function healthCheckRunning(boardId: string, startedAtMs: number): BenchError {
  return new BenchError('board_health_check_running', `board ${boardId} is running a health check started by an administrator at ${isoFromMs(startedAtMs)} (retry_after_seconds=5)`, {
    retryAfterSeconds: 5,
  });
}

/** A flash of a small image on the simulators and the mock takes well under this, host ms; a probe's takes a few seconds. */
const EXPECTED_FLASH_MS = 1_000;

/**
 * When a job holding a board is expected to end, host ms: its capture window (`uart_seconds`,
 * device time, close to host time on every backend but a slow simulator) after reset release, or
 * after an expected flash when it has not started running yet. A job past that (slow to stop, or
 * hung until its deadline) is looked at again in `OVERDUE_RETRY_MS`.
 */
export function expectedJobEndMs(job: Pick<JobRecord, 'uartSeconds' | 'startedAtMs' | 'runningAtMs'>, nowMs: number): number {
  const runningAtMs = job.runningAtMs ?? Math.max(nowMs, (job.startedAtMs ?? nowMs) + EXPECTED_FLASH_MS);
  const endMs = runningAtMs + Math.round(job.uartSeconds * 1000);
  return endMs > nowMs ? endMs : nowMs + OVERDUE_RETRY_MS;
}

/** How soon to ask again about a job already past its expected end, host ms. */
const OVERDUE_RETRY_MS = 5_000;
