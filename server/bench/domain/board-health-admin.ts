import { type Clock, isoFromMs } from '../../../core/clock.js';
import type { Logger } from '../../http/logger.js';
import type { BenchStore } from '../../storage/bench/bench-store.js';
import { BenchError } from './bench-errors.js';
import type { BoardAccess } from './board-access.js';
import type { BoardHealthControl } from '../../../backends/backend.js';
import type { LiveBoards } from './live-boards.js';
import { healthCheckInstance } from './instance-health-check.js';
import { runHealthCheck } from './run-health-check.js';
import type { WorkerGateway } from '../workers/worker-gateway.js';
import { type BoardAfterAdmin, type BoardHealthCheck, type KeptBoardHealth, showableHealth } from './kept-board-health.js';

/** Default of `BenchDeps.healthCheckTimeoutMs`: the probe's flash budget plus a slow boot. */
export const DEFAULT_HEALTH_CHECK_TIMEOUT_MS = 120_000;

/**
 * Board health, as an administrator sees and changes it: the health kept in the store for a
 * board's backend, releasing a quarantined board, and running a board's health check (one per
 * board at a time, holding the board in `BoardAccess.healthChecks` while it runs). Every board
 * takes one path, whether its worker runs in this process or dials in (decision 0430): the keeper
 * is `StoredBoardHealth` (stored-board-health.ts), so the server never calls a backend here.
 */
export class BoardHealthAdmin {
  constructor(
    private readonly deps: {
      clock: Clock;
      store: BenchStore;
      boards: LiveBoards;
      logger: Logger;
      access: BoardAccess;
      gateway: WorkerGateway;
      healthCheckTimeoutMs?: number;
    },
  ) {}

  private now(): number {
    return this.deps.clock.nowMs();
  }

  /**
   * The health kept for `boardId`'s backend, or null when no backend of this board keeps any, or
   * when reading it fails or gives a record no answer can show (logged). Never throws: one board's
   * bad record must not fail `GET /admin` or the console for every board.
   */
  async boardHealth(boardId: string): Promise<KeptBoardHealth | null> {
    const keeper = this.deps.boards.healthControl(boardId);
    if (!keeper) return null;
    try {
      // Checked here, inside the containment: views/ shape it later, outside any try.
      return { backend: keeper.name, record: showableHealth(await keeper.control.health(boardId)) };
    } catch (err) {
      this.deps.logger.error(`reading the health of board ${boardId} (kept for its ${keeper.name} backend) failed`, err);
      return null;
    }
  }

  /** `board_not_found` for an unknown board, `board_health_unsupported` when none of its backends keeps board health. */
  private async healthKeeper(boardId: string, action: string) {
    const board = this.deps.access.knownBoard(boardId);
    // A board on a worker: who keeps its health is known from its resolution (cached briefly).
    await this.deps.boards.get(board.id);
    const keeper = this.deps.boards.healthControl(board.id);
    if (!keeper) {
      const running = this.deps.boards.lastKnown(board.id)?.backendName;
      // With `auto` and nothing usable the name is "none": name the board's backends instead.
      const which =
        running && running !== 'none'
          ? `its backend (${running}) keeps no board health and never quarantines it`
          : `its backends (${Object.keys(board.backends).join(', ')}) keep no board health and never quarantine it`;
      throw new BenchError('board_health_unsupported', `cannot ${action} board ${board.id}: ${which}`);
    }
    return keeper;
  }

  /** Status, reason and health right after an administrator changed the board's health. */
  private async freshBoardView(
    boardId: string,
    keeper: { name: string; control: BoardHealthControl },
  ): Promise<Omit<BoardAfterAdmin, 'board'>> {
    this.deps.boards.invalidate(boardId);
    const state = (await this.deps.access.boardStates()).find((s) => s.resolved.board.id === boardId)!;
    // Read directly: if the store cannot say, the administrator gets a 500 (logged), not a guess.
    const health = { backend: keeper.name, record: await keeper.control.health(boardId) };
    return { status: state.status, offlineReason: state.resolved.offlineReason, health };
  }

  /**
   * `POST /admin/boards/{board}/release`: an administrator puts a quarantined board back in
   * service (idempotent: releasing a healthy board resets its failure count). A healthy record in
   * the store: the worker's backend reads it at its next availability check.
   */
  async releaseBoard(boardId: string): Promise<BoardAfterAdmin> {
    // One instance of a pool of several (decision 0551): its own record, the pool untouched.
    const instance = await this.deps.access.instanceNamed(boardId);
    if (instance) return this.releaseInstance(instance.board.id, boardId);
    const keeper = await this.healthKeeper(boardId, 'release');
    await keeper.control.release(boardId);
    this.deps.logger.info(`board ${boardId} released by an administrator`);
    return { board: boardId, ...(await this.freshBoardView(boardId, keeper)) };
  }

  /** Releases one instance of a pool of several; the answer shows that instance as it is now. */
  private async releaseInstance(boardId: string, instance: string): Promise<BoardAfterAdmin> {
    const health = this.deps.access.pools!.health;
    await health.release(instance);
    this.deps.logger.info(`instance ${instance} of board ${boardId} released by an administrator`);
    this.deps.boards.invalidate(boardId);
    const state = (await this.deps.access.boardStates()).find((s) => s.resolved.board.id === boardId)!;
    const view = state.pool?.instances.find((i) => i.instance === instance);
    return {
      board: instance,
      status: view?.status ?? 'offline',
      offlineReason: view?.offlineReason ?? null,
      health: { backend: state.resolved.backendName, record: await health.get(instance) },
    };
  }

  /**
   * `POST /admin/boards/{board}/health-check`: runs the board's health-check firmware (passing
   * releases the board), or one instance's of a pool of several (instance-health-check.ts). Refused when the backend has no health check, the board is leased or
   * has jobs, or a check is already running; one check per board at a time, and while it runs
   * the board refuses sessions and jobs and is listed `busy` unless offline.
   */
  async healthCheckBoard(boardId: string): Promise<BoardHealthCheck> {
    // One instance of a pool of several (decision 0606): its own firmware, its own record.
    const instance = await this.deps.access.instanceNamed(boardId);
    if (instance) {
      const timeoutMs = this.deps.healthCheckTimeoutMs ?? DEFAULT_HEALTH_CHECK_TIMEOUT_MS;
      return healthCheckInstance({ ...this.deps, timeoutMs }, instance.board.id, boardId);
    }
    const keeper = await this.healthKeeper(boardId, 'health-check');
    const healthCheck = keeper.control.healthCheck?.bind(keeper.control);
    if (!healthCheck) {
      throw new BenchError('health_check_unsupported', `cannot health-check board ${boardId}: the ${keeper.name} backend has no health-check run`);
    }
    const { healthChecks } = this.deps.access;
    const running = healthChecks.get(boardId);
    if (running) {
      throw new BenchError('health_check_already_running', `board ${boardId} is already running a health check started at ${isoFromMs(running.startedAtMs)}`);
    }
    // Claimed before the first await, so two administrators cannot start two checks.
    let unclaim!: () => void;
    const done = new Promise<void>((resolve) => (unclaim = resolve));
    healthChecks.set(boardId, { startedAtMs: this.now(), done });
    const unclaimBoard = () => {
      // Only our own claim: a later check may hold the board by the time this runs again.
      if (healthChecks.get(boardId)?.done === done) healthChecks.delete(boardId);
      unclaim();
    };
    let stillRunning: Promise<unknown> | undefined;
    try {
      const lease = (await this.deps.store.listLeases(this.now())).find((l) => l.board === boardId);
      const activity = (await this.deps.store.boardActivity()).get(boardId) ?? { queued: 0, active: 0 };
      if (lease || activity.active > 0 || activity.queued > 0) {
        const holder = lease ? `is leased by agent "${lease.agentLabel}"` : `has ${activity.active + activity.queued} job(s) running or waiting`;
        throw new BenchError('board_not_idle', `cannot health-check board ${boardId}: it ${holder}; a health check needs the board to itself`);
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
      return { board: boardId, outcome, ...(await this.freshBoardView(boardId, keeper)) };
    } finally {
      // A backend that ignored its abort keeps the board claimed until it really lets go.
      if (stillRunning) void stillRunning.finally(unclaimBoard);
      else unclaimBoard();
    }
  }
}
