import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import path from 'node:path';
import type { Board, BackendName } from '../../../boards/board-schema.js';
import type { Backend } from '../../../backends/backend.js';
import type { Clock } from '../../../core/clock.js';
import type { Logger } from '../../http/logger.js';
import type { BenchStore, FinishedJob, JobRecord } from '../../storage/bench/bench-store.js';
import { countInstanceHealth, quarantinedBy } from '../domain/instance-health.js';
import type { FirmwareBlobs } from '../../storage/bench/firmware-blob-store.js';
import type { BenchLimits } from '../domain/bench-limits.js';
import type { BackendChoice } from '../../../harness/board-resolution.js';
import type { JobLive } from '../domain/job-live.js';
import { DEFAULT_AVAILABILITY_CACHE_MS, LiveBoards } from '../domain/live-boards.js';
import { LOCAL_WORKER_ID, type LocalWorkerOptions, type LocalWorkerSetup } from './local-worker.js';
import { PoolInstances } from '../domain/pool-instances.js';
import { remoteBoardResolver } from './remote-boards.js';
import { remoteHealthKeepers } from '../domain/stored-board-health.js';
import { WorkerAdmin } from './worker-admin.js';
import { rosterCacheMs, WorkerRoster } from './worker-roster.js';
import { WorkerGateway } from './worker-gateway.js';
import { defaultWorkerTimings, WorkerProtocol, type WorkerTimings } from './worker-protocol.js';

export interface BenchWorkersConfig {
  clock: Clock;
  store: BenchStore;
  blobs: FirmwareBlobs;
  live: JobLive;
  limits: BenchLimits;
  logger: Logger;
  boards: readonly Board[];
  /** The backends of the worker in this process (none without one). */
  backends: Partial<Record<BackendName, Backend>>;
  backend: BackendChoice;
  /** Deadlines and abort grace of jobs run by the worker in this process. */
  dispatcher: LocalWorkerOptions['dispatcher'];
  /** `false`: no worker in this process (a lab server). */
  localWorker: LocalWorkerOptions | false | undefined;
  /** Set on a shared database: each replica's own worker then has an id of its own and claims that lapse. */
  databaseUrl: string | undefined;
  /** The address other replicas reach this one at, for the debug streams it serves (decision 0663). */
  replicaUrl: string | (() => string | null) | undefined;
  /** The data dir (names a replica's own worker). */
  dataDir: string;
  availabilityCacheMs: number | undefined;
  healthCheckTimeoutMs: number;
  workerTimings: Partial<WorkerTimings> | undefined;
  /** Told the jobs a revocation failed (set once live readers and claims exist). */
  onJobsReleased: (jobs: readonly JobRecord[]) => void;
}

/**
 * Who serves the boards, wired once (issue 10): the worker credentials, the gateway and protocol
 * every worker talks through, the boards as the workers report them into the store, their
 * health keepers, and the setup of the worker in this process. A worker in this process and a
 * remote one take the same path: each reports its boards through `WorkerProtocol` into the store,
 * and the server reads availability only from there (decision 0460).
 */
export function benchWorkers(config: BenchWorkersConfig) {
  const { clock, store, logger } = config;
  const timings: WorkerTimings = { ...defaultWorkerTimings, ...config.workerTimings };
  // On a shared database a job may be queued, or a board freed, through another replica: waiting
  // claims look at the store every 2 s. Alone on SQLite, the events of this process suffice.
  // Instances of pools of several keep their own health (decision 0551): claims skip the quarantined.
  const instanceHealth = {
    unquarantined: (board: string, instances: readonly string[]) => pools.unquarantined(board, instances),
    count: countInstanceHealth,
    counted: (finished: FinishedJob) => {
      const quarantine = quarantinedBy(finished)?.quarantine;
      if (quarantine) logger.warn(`instance ${finished.job.instance} of board ${finished.job.board} quarantined: ${quarantine.reason}`);
    },
  };
  const gateway = new WorkerGateway({ clock, store, blobs: config.blobs, live: config.live, limits: config.limits, logger, claimPollMs: config.databaseUrl ? 2_000 : undefined, instanceHealth, replicaUrl: replicaUrlOf(config.replicaUrl) });
  const workerAdmin = new WorkerAdmin({
    clock,
    store,
    workerOfflineAfterMs: timings.offlineAfterSeconds * 1000,
    onWorkersChanged: () => roster.invalidate(),
    onJobsReleased: config.onJobsReleased,
    // The administrator waiting for one hears its end now; the board it held shows free at once.
    onHealthChecksEnded: (checks) => {
      for (const check of checks) {
        logger.warn(`health check ${check.checkId} on ${check.board} failed: its worker was revoked`);
        gateway.healthChecks.ended(check.checkId);
        boards.invalidate(check.board);
      }
    },
  });
  // The workers as read at most a few seconds ago, read again after a report through here (decision 0860).
  const roster = new WorkerRoster({
    clock,
    store,
    cacheMs: rosterCacheMs({ availabilityCacheMs: config.availabilityCacheMs ?? DEFAULT_AVAILABILITY_CACHE_MS, heartbeatMs: timings.heartbeatSeconds * 1000, offlineAfterMs: timings.offlineAfterSeconds * 1000 }),
    changes: store.sessionQueue,
  });
  const health = remoteHealthKeepers({ clock, store, gateway, healthCheckTimeoutMs: config.healthCheckTimeoutMs });
  const localWorkerId = config.localWorker === false ? undefined : (config.localWorker?.workerId ?? (config.databaseUrl ? replicaWorkerId(config.dataDir) : LOCAL_WORKER_ID));
  const boards = new LiveBoards({
    clock,
    boards: config.boards,
    cacheMs: config.availabilityCacheMs,
    logger,
    resolve: remoteBoardResolver({ clock, store, workers: workerAdmin, selfWorkerId: localWorkerId, onHealthKeeper: health.onHealthKeeper }),
    healthKeeper: health.keeperOf,
  });
  const protocol = new WorkerProtocol({ clock, store, gateway, boards, roster, logger, timings });
  const pools = new PoolInstances({ clock, store, listWorkers: () => roster.list(), stopListing: () => roster.close(), isOnline: (w, nowMs) => workerAdmin.isOnline(w, nowMs), selfWorkerId: localWorkerId });
  let localWorker: LocalWorkerSetup | undefined;
  if (localWorkerId !== undefined) {
    const label = config.databaseUrl ? `in replica ${localWorkerId}` : 'in this server';
    localWorker = {
      dispatcher: config.dispatcher,
      // On a shared database each replica's worker has claims that lapse if the replica dies;
      // alone on SQLite, its claims last until its next start.
      ...(config.databaseUrl ? { claimMs: timings.claimSeconds * 1000 } : {}),
      workerId: localWorkerId,
      ...(config.localWorker ?? {}),
      boards: config.boards,
      backends: config.backends,
      choice: config.backend,
      reportEveryMs: timings.heartbeatSeconds * 1000,
      report: async (states, { first }) => {
        const record = await workerAdmin.inProcess(localWorkerId, label);
        if (first) await protocol.announce(record, states, []);
        else await protocol.heartbeat(record, states);
      },
    };
  }
  return { timings, workerAdmin, gateway, boards, protocol, localWorker, pools };
}

/** The id of a replica's own worker: stable across its restarts (host and data dir), distinct between replicas. */
function replicaWorkerId(dataDir: string): string {
  return `local-${hostname()}-${createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 8)}`;
}

/** `--replica-url` as a getter (tests on port 0 know it only once listening). */
function replicaUrlOf(replicaUrl: BenchWorkersConfig['replicaUrl']): () => string | null {
  return typeof replicaUrl === 'function' ? replicaUrl : () => replicaUrl ?? null;
}
