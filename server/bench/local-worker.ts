import type { Board } from '../../boards/board-schema.js';
import { type Backend, BackendError } from '../../backends/backend.js';
import type { LocalDispatcherOptions } from '../../harness/dispatcher.js';
import { BenchWorker, type WorkerBoard } from '../../harness/worker/bench-worker.js';
import type { WorkerLink } from '../../harness/worker/worker-link.js';
import type { BenchDeps } from './bench-deps.js';
import { boardHealthControlOf } from './board-health-control.js';

/** The id the worker inside the server's own process claims jobs under (kept across restarts). */
export const LOCAL_WORKER_ID = 'local';

export interface LocalWorkerOptions {
  /** Deadlines and abort grace of the jobs. */
  dispatcher?: Omit<LocalDispatcherOptions, 'clock'>;
  /** Host ms between two claim renewals of a running job (they also save its UART). Default 2 000. */
  heartbeatMs?: number;
  /** The worker's id in the store; default `LOCAL_WORKER_ID` (one server on its own SQLite). */
  workerId?: string;
  /** Host ms its claims last unless renewed; null (default): until the server's next start. */
  claimMs?: number | null;
  /** Wraps the in-process link (metrics, tests that hold a message back); default: as it is. */
  decorateLink?: (link: WorkerLink) => WorkerLink;
}

/**
 * The embedded default's worker: the same `BenchWorker` a single-board computer runs, in the
 * server's process, on the server's boards, through the gateway's in-process link (claims that
 * never lapse; the next start releases them). A queued job's board is asked again when the job
 * starts (`gatedBackend`): a board that went offline meanwhile fails the job as `unavailable`.
 */
export function createLocalWorker(deps: Pick<BenchDeps, 'clock' | 'gateway' | 'boards' | 'logger'>, options: LocalWorkerOptions = {}): BenchWorker {
  return new BenchWorker({
    clock: deps.clock,
    link: (options.decorateLink ?? ((link) => link))(deps.gateway.linkFor(options.workerId ?? LOCAL_WORKER_ID, { claimMs: options.claimMs ?? null })),
    boards: deps.boards.ids,
    boardFor: (boardId) => {
      const board = deps.boards.board(boardId);
      return board && gatedBackend(deps, board);
    },
    afterJob: (boardId, backend) => afterJobOn(deps, boardId, backend),
    dispatcher: options.dispatcher,
    heartbeatMs: options.heartbeatMs,
    logError: (message, cause) => deps.logger.error(message, cause),
  });
}

/**
 * The backend a job runs on: when the worker opens the board, its availability is asked again
 * (cached as for listings) and an offline board fails the job with the reason. With
 * `--backend auto` the job runs on whichever backend serves the board at that moment. Health
 * checks run on the backend keeping the board's health (available or not: a quarantined board is
 * exactly one to check); the worker holds the board while one runs, as for a job.
 */
function gatedBackend(deps: Pick<BenchDeps, 'boards'>, board: Board): WorkerBoard {
  let used: Backend | undefined;
  const live = deps.boards;
  const current = async (): Promise<Backend> => {
    const now = await live.get(board.id);
    if (!now.backend) throw new BackendError('unavailable', `board ${board.id} is offline: ${now.offlineReason ?? 'no backend'}`);
    return now.backend;
  };
  const backend: Backend = {
    // Named after the backend that ran it, or that serves the board as far as we know yet (the
    // worker's deadline names it in timeout messages).
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
  return { board, backend, used: () => used, healthKeeper: live.ownHealthBackend(board.id)?.control };
}

/**
 * A backend that keeps board health may just have counted a failure or quarantined the board:
 * its availability is asked again now (not after the cache window), so listings show it at once
 * and the operator's log says so when it happens. Never rejects.
 */
async function afterJobOn(deps: Pick<BenchDeps, 'boards' | 'logger'>, boardId: string, backend: Backend | undefined): Promise<void> {
  if (!backend || !boardHealthControlOf(backend)) return;
  try {
    deps.boards.invalidate(boardId);
    await deps.boards.get(boardId);
  } catch (err) {
    deps.logger.error(`asking board ${boardId} for its health after a job failed`, err);
  }
}
