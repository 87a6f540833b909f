import type { Board } from '../../../boards/board-schema.js';
import { type Backend, BackendError } from '../../../backends/backend.js';
import { type Clock, isoFromMs } from '../../../core/clock.js';
import type { BenchStore } from '../../storage/bench/bench-store.js';
import type { ResolvedBoard } from '../../../harness/board-resolution.js';
import type { WorkerBoardReport, WorkerRecord } from '../../storage/bench/worker-registry.js';
import type { WorkerAdmin } from './worker-admin.js';

/**
 * The server's boards (issue 10), whether their workers run on other hosts or in this process: a
 * board is online while a worker that serves it was heard from recently and reports it available;
 * otherwise it is offline with the reason (no worker serves it, the worker missed its heartbeats
 * since a given time, or what the worker's backend says). The server runs no backend itself
 * (decision 0460): the board's `backend` only names the worker's and refuses to open.
 */
export function remoteBoardResolver(deps: {
  clock: Clock;
  store: BenchStore;
  workers: WorkerAdmin;
  /**
   * The worker in this process, if any: online while this process runs (it answers, so its worker
   * lives), whatever the injected clock says of its last heartbeat. Other replicas judge it by
   * its heartbeats like any worker.
   */
  selfWorkerId?: string;
  /** Told, at each resolution, which worker keeps the board's health (undefined: none does). */
  onHealthKeeper?: (boardId: string, keeper: { worker: WorkerRecord; report: WorkerBoardReport; online: boolean } | undefined) => void;
}): (board: Board) => Promise<ResolvedBoard> {
  return async (board) => {
    const nowMs = deps.clock.nowMs();
    const serving = (await deps.store.workers.list())
      .filter((w) => w.revokedAtMs === null)
      .flatMap((w) => w.boards.filter((b) => b.board === board.id).map((report) => ({ worker: w, report })));
    const isOnline = (w: WorkerRecord) => w.workerId === deps.selfWorkerId || deps.workers.isOnline(w, nowMs);
    const online = serving.filter((s) => isOnline(s.worker));
    // Health is the store's whether or not the worker is online (a quarantine outlives it); a check
    // goes to a worker that is online, else to the one that served the board last.
    const keeper = [...online, ...serving].find((s) => s.report.keepsHealth);
    deps.onHealthKeeper?.(board.id, keeper && { ...keeper, online: online.includes(keeper) });
    if (serving.length === 0) return { board, backend: null, backendName: 'none', offlineReason: `no bench worker serves board ${board.id}` };
    // A quarantine in the store shows at once on every replica, before the worker's next heartbeat.
    const quarantine = keeper && (await deps.store.boardHealth.get(board.id)).quarantine;
    if (keeper && quarantine) return { board, backend: null, backendName: keeper.report.backend, offlineReason: quarantine.reason };
    // Unavailable only because of a quarantine the store no longer holds (an administrator released
    // it, or a health check passed): available now, not at the worker's next heartbeat.
    const ready = online.find((s) => s.report.available || (s.report.quarantined === true && s.report.keepsHealth === true));
    if (ready) return { board, backend: workerBackend(ready.report.backend, ready.worker.label), backendName: ready.report.backend, offlineReason: null };
    const why = serving.map(({ worker, report }) =>
      // The embedded default's own worker: the backend's reason alone, as a newcomer expects it.
      worker.workerId === deps.selfWorkerId && serving.length === 1
        ? (report.reason ?? 'unavailable')
        : isOnline(worker)
        ? `worker ${worker.label} (${worker.workerId}): ${report.reason ?? 'unavailable'}`
        : `worker ${worker.label} (${worker.workerId}) missed its heartbeats: last heard from ${worker.lastSeenAtMs === null ? 'never' : `at ${isoFromMs(worker.lastSeenAtMs)}`}`,
    );
    return { board, backend: null, backendName: serving[0]!.report.backend, offlineReason: why.join('; ') };
  };
}

/** Names the backend a worker runs a board on; the server never opens it (workers do). */
function workerBackend(name: string, workerLabel: string): Backend {
  return {
    name: name as Backend['name'],
    availability: async () => ({ available: true }),
    open: async (board) => {
      throw new BackendError('unavailable', `board ${board.id} runs on bench worker ${workerLabel}; this server runs no backend itself`);
    },
  };
}
