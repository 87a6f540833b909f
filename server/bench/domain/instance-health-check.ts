import { type Clock, isoFromMs } from '../../../core/clock.js';
import type { Logger } from '../../http/logger.js';
import type { BenchStore } from '../../storage/bench/bench-store.js';
import { BenchError } from './bench-errors.js';
import type { BoardAccess } from './board-access.js';
import type { BoardHealthCheck } from './kept-board-health.js';
import { runHealthCheck } from './run-health-check.js';
import { StoredBoardHealth } from './stored-board-health.js';
import type { WorkerGateway } from '../workers/worker-gateway.js';

/**
 * `POST /admin/boards/{instance}/health-check` for one instance of a pool of several (decision
 * 0606): the worker serving the instance runs that instance's own health-check firmware (the
 * probe: its bench-file entry's), through the same request in the store as a board's check
 * (decision 0421), recorded under the instance's id. Passing releases that instance only
 * (decision 0551); failing leaves its record as it is. The pool serves on meanwhile: the instance
 * is listed busy, handed out last, and no worker claims a job on it until the check ends.
 */
export async function healthCheckInstance(
  deps: { clock: Clock; store: BenchStore; gateway: WorkerGateway; logger: Logger; access: BoardAccess; timeoutMs: number },
  boardId: string,
  instance: string,
): Promise<BoardHealthCheck> {
  const { access, store, clock } = deps;
  const pools = access.pools!;
  const served = (await pools.of(boardId)).find((i) => i.instance === instance);
  // The worker serving it (an instance of a pool of several has one); asked even when silent, which StoredBoardHealth refuses with the reason.
  const worker = served?.workers.find((w) => w.online) ?? served?.workers[0];
  const report = worker ? (await store.workers.get(worker.workerId))?.boards.find((r) => r.board === boardId) : undefined;
  if (!worker || !report?.healthCheck) {
    const which = report ? `its ${report.backend} backend on worker ${worker!.label} has no health-check run` : 'no worker serves it';
    throw new BenchError('health_check_unsupported', `cannot health-check instance ${instance} of board ${boardId}: ${which}`);
  }
  const running = (await store.healthChecks.active()).find((c) => c.board === instance);
  if (running) throw new BenchError('health_check_already_running', `instance ${instance} of board ${boardId} is already running a health check started at ${isoFromMs(running.requestedAtMs)}`);
  const lease = (await store.listLeases(clock.nowMs())).find((l) => l.instance === instance);
  const activity = (await store.instanceActivity()).get(instance) ?? { queued: 0, active: 0 };
  if (lease || activity.active > 0 || activity.queued > 0) {
    const holder = lease ? `is leased by agent "${lease.agentLabel}"` : `has ${activity.active + activity.queued} job(s) running or waiting`;
    throw new BenchError('board_not_idle', `cannot health-check instance ${instance} of board ${boardId}: it ${holder}; a health check needs the instance to itself`);
  }
  const keeper = new StoredBoardHealth({ clock, store, gateway: deps.gateway, worker, healthCheckTimeoutMs: deps.timeoutMs, canCheck: true, online: worker.online });
  const { outcome, stillRunning } = await runHealthCheck({ boardId: instance, backendName: report.backend, healthCheck: keeper.healthCheck!, clock, timeoutMs: deps.timeoutMs });
  // A check the deadline cut short lapses in the store (HEALTH_CHECK_GRACE_MS): the instance stays held until then.
  void stillRunning;
  if (outcome.passed) await pools.health.release(instance);
  deps.logger.info(`health check on instance ${instance} of board ${boardId}: ${outcome.passed ? 'passed, instance released' : `failed: ${outcome.reason}`}`);
  const state = (await access.boardStates()).find((s) => s.resolved.board.id === boardId);
  const view = state?.pool?.instances.find((i) => i.instance === instance);
  return {
    board: instance,
    outcome,
    status: view?.status ?? 'offline',
    offlineReason: view?.offlineReason ?? null,
    health: { backend: report.backend, record: await pools.health.get(instance) },
  };
}
