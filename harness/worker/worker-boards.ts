import type { Board, BackendName } from '../../boards/board-schema.js';
import { type Backend, BackendError } from '../../backends/backend.js';
import { type BackendChoice, healthBackendOf, resolveBoardBackend, resolveBoardBackends, type ResolvedBoard } from '../board-resolution.js';
import type { WorkerBoard } from './bench-worker.js';

/**
 * The backends a bench worker on its own host runs its boards on, by `--backend`: one backend for
 * every board, or with `auto` the first backend listed for the board that can run it when the job
 * opens it (as the server's own worker does), so a board whose first listed backend is missing
 * here (Renode before a real kit's probe) still runs. Board health is kept and checked by
 * `healthBackendOf`'s backend, whether or not it runs the board's jobs.
 */
export class WorkerBoards {
  private readonly byId: ReadonlyMap<string, Board>;
  /** Each board's last resolution (every heartbeat): the job deadline is set before the board is opened. */
  private readonly lastResolved = new Map<string, ResolvedBoard>();

  constructor(
    private readonly boards: readonly Board[],
    private readonly backends: Partial<Record<BackendName, Backend>>,
    private readonly choice: BackendChoice,
  ) {
    this.byId = new Map(boards.map((b) => [b.id, b]));
  }

  /** Every board as this host can run it now (never rejects). */
  async resolveAll(): Promise<ResolvedBoard[]> {
    const resolved = await resolveBoardBackends(this.boards, this.backends, this.choice);
    for (const r of resolved) this.lastResolved.set(r.board.id, r);
    return resolved;
  }

  /** The backend keeping `board`'s health and running its health checks, if any, with its name. */
  healthKeeper(board: Board) {
    return healthBackendOf(board, this.backends, this.choice);
  }

  /** The board and backend for a job or health check that starts now; undefined for a board not served here. */
  target(boardId: string): WorkerBoard | undefined {
    const board = this.byId.get(boardId);
    if (!board) return undefined;
    const healthKeeper = this.healthKeeper(board)?.control;
    if (this.choice !== 'auto') {
      const backend = this.backends[this.choice];
      return backend && { board, backend, healthKeeper };
    }
    return { ...this.chosenAtOpen(board), healthKeeper };
  }

  /** With `auto`: the backend that can run `board` when the job opens it; an offline board fails the job with the reasons. */
  private chosenAtOpen(board: Board): WorkerBoard {
    let used: Backend | undefined;
    const known = () => used ?? this.lastResolved.get(board.id)?.backend ?? undefined;
    const current = async (): Promise<Backend> => {
      const now = await resolveBoardBackend(board, this.backends, 'auto');
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
    };
    return { board, backend, used: () => used };
  }
}
