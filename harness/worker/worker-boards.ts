import type { Board, BackendName } from '../../boards/board-schema.js';
import { type Backend, BackendError } from '../../backends/backend.js';
import { type BackendChoice, healthBackendOf, resolveBoardBackend, resolveBoardBackends, type ResolvedBoard } from '../board-resolution.js';
import type { WorkerBoard } from './bench-worker.js';
import { checkPoolSizes, poolSizeOf, type PoolSizes } from './pool-size.js';

/**
 * One board as a worker reports it to the server (announce, heartbeat): whether its backend can
 * run it now and why not, and whether that backend keeps board health and can check it.
 */
export interface WorkerBoardState {
  board: string;
  /** The backend that runs it here (with `auto` and a quarantine: the one keeping its health). */
  backend: string;
  available: boolean;
  reason: string | null;
  keepsHealth: boolean;
  healthCheck: boolean;
  /**
   * Unavailable only because of a quarantine (the server then follows its stored record, so a
   * release shows at once); false when the board is also unusable for another reason.
   */
  quarantined: boolean;
  /** How many instances of the board this worker runs at once (decision 0510). */
  poolSize: number;
}

/**
 * The backends a bench worker runs its boards on, by `--backend`: one backend for every board, or
 * with `auto` the first backend listed for the board that can run it when the job opens it, so a
 * board whose first listed backend is missing here (Renode before a real kit's probe) still runs.
 * Either way a board is asked again when a job opens it: one that went offline since the last
 * report fails the job as `unavailable` with the reason. Board health is kept and checked by
 * `healthBackendOf`'s backend, whether or not it runs the board's jobs. The same class serves the
 * worker on a single-board computer and the worker in the server's process.
 */
export class WorkerBoards {
  private readonly byId: ReadonlyMap<string, Board>;
  /** Each board's last resolution (every heartbeat): the job deadline is set before the board is opened. */
  private readonly lastResolved = new Map<string, ResolvedBoard>();
  private readonly poolSizes: PoolSizes;

  /** `poolSizes`: how many instances of each emulated board run here at once (checked: 1..MAX_POOL_SIZE; default 1). */
  constructor(
    private readonly boards: readonly Board[],
    private readonly backends: Partial<Record<BackendName, Backend>>,
    private readonly choice: BackendChoice,
    poolSizes: PoolSizes = {},
  ) {
    this.byId = new Map(boards.map((b) => [b.id, b]));
    this.poolSizes = checkPoolSizes(poolSizes);
  }

  /** How many jobs of `boardId` run here at once: its pool size as last reported (1 before the first report). */
  poolSize(boardId: string): number {
    const resolved = this.lastResolved.get(boardId);
    return resolved ? this.poolSizeOf(resolved) : 1;
  }

  /** The ids of the boards served here, in catalog order. */
  get ids(): string[] {
    return [...this.byId.keys()];
  }

  /** Every board as this host can run it now (never rejects). */
  async resolveAll(): Promise<ResolvedBoard[]> {
    const resolved = await resolveBoardBackends(this.boards, this.backends, this.choice);
    for (const r of resolved) this.lastResolved.set(r.board.id, r);
    return resolved;
  }

  /** Every board as the worker reports it now (never rejects). */
  async states(): Promise<WorkerBoardState[]> {
    const resolved = await this.resolveAll();
    return Promise.all(resolved.map((r) => this.stateOf(r)));
  }

  /** The backend keeping `board`'s health and running its health checks, if any, with its name. */
  healthKeeper(board: Board) {
    return healthBackendOf(board, this.backends, this.choice);
  }

  /** The backend that runs jobs on `boardId` as far as the last report knows (for job deadlines). */
  lastKnownBackend(boardId: string): Backend | undefined {
    return this.lastResolved.get(boardId)?.backend ?? (this.choice === 'auto' ? undefined : this.backends[this.choice]);
  }

  /** The board and backend for a job or health check that starts now; undefined for a board not served here. */
  target(boardId: string): WorkerBoard | undefined {
    const board = this.byId.get(boardId);
    if (!board) return undefined;
    const healthKeeper = this.healthKeeper(board)?.control;
    if (this.choice !== 'auto' && !this.backends[this.choice]) return undefined;
    return { ...this.chosenAtOpen(board), healthKeeper };
  }

  private async stateOf(r: ResolvedBoard): Promise<WorkerBoardState> {
    const keeper = this.healthKeeper(r.board);
    const quarantine = keeper === undefined || r.backend !== null ? undefined : (await keeper.control.health(r.board.id)).quarantine;
    // Quarantined and nothing else: a backend keeping health checks its hardware before the
    // quarantine (the probe: tool, serial device), so its reason is the quarantine's only when
    // nothing else is wrong. A board also unplugged says so, and stays offline after a release.
    const quarantined = quarantine !== undefined && r.offlineReason !== null && r.offlineReason.includes(quarantine.reason);
    return {
      board: r.board.id,
      // With `auto` a quarantined board has no usable backend: named by the one keeping its health.
      backend: quarantine !== undefined ? keeper!.name : r.backendName,
      available: r.backend !== null,
      reason: r.offlineReason,
      keepsHealth: keeper !== undefined,
      healthCheck: keeper?.control.healthCheck !== undefined,
      quarantined,
      poolSize: this.poolSizeOf(r),
    };
  }

  /** Physical boards as the backend has them (the probe's bench-file entries), else the worker's size for emulated ones. */
  private poolSizeOf(r: ResolvedBoard): number {
    return r.backend?.instanceCount?.(r.board) ?? poolSizeOf(r.board.id, r.backendName, this.poolSizes);
  }

  /** The backend that can run `board` when the job opens it; an offline board fails the job with the reasons. */
  private chosenAtOpen(board: Board): WorkerBoard {
    let used: Backend | undefined;
    const known = () => used ?? this.lastKnownBackend(board.id);
    const current = async (): Promise<Backend> => {
      const now = await resolveBoardBackend(board, this.backends, this.choice);
      this.lastResolved.set(board.id, now);
      if (!now.backend) throw new BackendError('unavailable', `board ${board.id} is offline: ${now.offlineReason ?? 'no backend'}`);
      return now.backend;
    };
    const backend: Backend = {
      get name() {
        return known()?.name ?? 'mock';
      },
      availability: async (b) => (await current()).availability(b),
      open: async (b, options) => {
        used = await current();
        return used.open(b, options);
      },
      jobBudgetMs: (b) => known()?.jobBudgetMs?.(b) ?? { flashMs: 0, resetMs: 0 },
      instanceCount: (b) => known()?.instanceCount?.(b) ?? 1,
    };
    return { board, backend, used: () => used };
  }
}
