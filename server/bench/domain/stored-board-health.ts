import { randomBytes } from 'node:crypto';
import { type BoardHealth, BackendError, type BoardHealthControl, type HealthCheckOutcome } from '../../../backends/backend.js';
import { type Clock, isoFromMs } from '../../../core/clock.js';
import { healthyBoardRecord } from '../../storage/bench/board-health-store.js';
import type { BackendName } from '../../../boards/board-schema.js';
import type { BenchStore } from '../../storage/bench/bench-store.js';
import type { WorkerBoardReport, WorkerRecord } from '../../storage/bench/worker-registry.js';
import type { WorkerGateway } from '../workers/worker-gateway.js';
import { boardOfInstance } from './pool-instances.js';

/** How long after its deadline a health check its worker never reported still holds its board (host ms). */
export const HEALTH_CHECK_GRACE_MS = 30_000;

/**
 * Board health of a board on a bench worker, remote or in this process (decisions 0421, 0430), as
 * the server's `BoardHealthControl`: the record is the store's (the worker's backend writes it,
 * through the worker protocol or, in this process, into the same table), a release writes a
 * healthy record there (the worker's backend reads it at its next availability check), and a
 * health check is a request in the store that the worker claims, runs and reports. The server
 * never calls a backend for any of it.
 */
export class StoredBoardHealth implements BoardHealthControl {
  constructor(
    private readonly deps: {
      clock: Clock;
      store: BenchStore;
      gateway: WorkerGateway;
      /** The worker serving the board, asked to run its health checks. */
      worker: { workerId: string; label: string };
      /** Host ms the worker's backend may take for a check. */
      healthCheckTimeoutMs: number;
      /** Whether the worker's backend can run a health check of the board. */
      canCheck: boolean;
      /** Whether the worker was heard from recently (a check asked of a silent worker is refused, not left to time out). */
      online: boolean;
    },
  ) {
    if (!deps.canCheck) this.healthCheck = undefined;
  }

  health(boardId: string): Promise<BoardHealth> {
    return this.deps.store.boardHealth.get(boardId);
  }

  async release(boardId: string): Promise<void> {
    await this.deps.store.boardHealth.put(boardId, { ...healthyBoardRecord });
  }

  healthCheck: BoardHealthControl['healthCheck'] = async (boardId, options = {}): Promise<HealthCheckOutcome> => {
    const { store, gateway, worker, clock } = this.deps;
    if (!this.deps.online) throw new BackendError('unavailable', `worker ${worker.label} (${worker.workerId}), which runs its health checks, is offline`);
    const checkId = `hc_${randomBytes(12).toString('hex')}`;
    const requested = await store.healthChecks.request({ checkId, board: boardId, workerId: worker.workerId, timeoutMs: this.deps.healthCheckTimeoutMs, nowMs: clock.nowMs() });
    if (requested.kind === 'already-active') {
      throw new BackendError('unavailable', `a health check of board ${boardId} requested at ${isoFromMs(requested.check.requestedAtMs)} is still running`);
    }
    // A check of one instance (decision 0606) wakes the claims of its pool's board.
    gateway.healthChecks.requested(boardOfInstance(boardId) ?? boardId);
    const done = await gateway.healthChecks.outcome(checkId, options.signal ?? new AbortController().signal);
    // Aborted: the caller's deadline won and answers for itself; the request lapses in the store.
    if (!done?.outcome) throw new BackendError('timeout', `health check ${checkId} on ${boardId} was abandoned by the server`);
    const { outcome } = done;
    if (outcome.passed) return outcome;
    if (outcome.refused) throw new BackendError('unavailable', `worker ${worker.label} (${worker.workerId}): ${outcome.reason}`);
    return { passed: false, reason: outcome.reason, uartText: outcome.uartText };
  };
}

type KeeperDeps = Pick<ConstructorParameters<typeof StoredBoardHealth>[0], 'clock' | 'store' | 'gateway' | 'healthCheckTimeoutMs'>;

/** Who keeps a board's health, as `LiveBoards.healthControl` answers it. */
export type HealthKeeper = { name: BackendName; control: StoredBoardHealth };

/**
 * The health keepers of the server's boards (on remote workers or the worker in this process), kept up to date by the board resolver
 * (`remoteBoardResolver`'s `onHealthKeeper`) and read by `LiveBoards.healthControl`.
 */
export function remoteHealthKeepers(deps: KeeperDeps) {
  const keepers = new Map<string, HealthKeeper>();
  return {
    onHealthKeeper: (boardId: string, keeper: { worker: WorkerRecord; report: WorkerBoardReport; online: boolean } | undefined): void => {
      if (!keeper) {
        keepers.delete(boardId);
        return;
      }
      const control = new StoredBoardHealth({
        ...deps,
        worker: { workerId: keeper.worker.workerId, label: keeper.worker.label },
        canCheck: keeper.report.healthCheck === true,
        online: keeper.online,
      });
      keepers.set(boardId, { name: keeper.report.backend as BackendName, control });
    },
    keeperOf: (boardId: string) => keepers.get(boardId),
  };
}
