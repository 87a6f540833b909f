import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import express from 'express';
import type { Board, BackendName } from '../../boards/board-schema.js';
import type { Backend } from '../../backends/backend.js';
import { checkImageForBoard } from '../../backends/image-check.js';
import { MockBackend } from '../../backends/mock/mock-backend.js';
import { registerChildLedger } from '../../backends/process/child-ledger.js';
import { type Clock, systemClock } from '../../core/clock.js';
import type { LocalDispatcherOptions } from '../../harness/dispatcher.js';
import { consoleLogger, type Logger } from '../http/logger.js';
import { claimDataDir } from '../lifecycle/claim-data-dir.js';
import { childLedgerDir, PARTIAL_BLOB_PATTERN, reapLeftoverChildren, removeDeadScratchDirs, removePartialFiles } from '../lifecycle/reap-leftovers.js';
import { type FirmwareBlobs, FirmwareBlobStore } from '../storage/bench/firmware-blob-store.js';
import { DiskSpace } from '../storage/disk-space.js';
import { redactDatabaseUrl } from '../storage/postgres/pg-pool.js';
import { PostgresBenchStore } from '../storage/bench/postgres/postgres-bench-store.js';
import { SqliteBenchStore } from '../storage/bench/sqlite-bench-store.js';
import type { BenchStore, JobRecord } from '../storage/bench/bench-store.js';
import type { BoardHealthStore } from '../storage/bench/board-health-store.js';
import { Bench, type BenchDeps, DEFAULT_HEALTH_CHECK_TIMEOUT_MS } from './domain/bench.js';
import { type BenchLimits, defaultBenchLimits, validateBenchLimits } from './domain/bench-limits.js';
import { type BenchSnapshot, benchSnapshot } from './views/bench-snapshot.js';
import type { BackendChoice } from '../../harness/board-resolution.js';
import { JobLive } from './domain/job-live.js';
import type { WorkerTimings } from './workers/worker-protocol.js';
import { benchWorkers } from './workers/bench-workers.js';
import { MAX_DELIVERY_PAUSE_MS } from '../../harness/worker/http-worker-link.js';
import type { LocalWorkerOptions } from './workers/local-worker.js';
import type { ConnectionCounts } from '../http/connection-cap.js';
import { buildBenchApp } from './bench-app.js';

export interface BenchServiceConfig {
  /** Host time; tests pass a fake. Default: the system clock. */
  clock?: Clock;
  /** Holds `bench.sqlite` and `firmware/<sha256>`; created when missing. */
  dataDir: string;
  boards: readonly Board[];
  /**
   * Backends by name, or a function building them once the database is open (it receives the
   * store's `BoardHealthStore` to give the probe backend, so board health survives restarts:
   * `({ quarantineStore }) => createBackends({ ..., quarantineStore })`). Default: `{ mock: new MockBackend() }`.
   */
  backends?: Partial<Record<BackendName, Backend>> | ((context: BackendsContext) => Partial<Record<BackendName, Backend>>);
  /** Host ms a board's availability is reused before its backend is asked again. Default 5 000. */
  availabilityCacheMs?: number;
  /** Host ms an administrator's health check may run before it is aborted. Default 120 000. */
  healthCheckTimeoutMs?: number;
  /** `--backend`: which backend runs each board. Default `mock`. */
  backend?: BackendChoice;
  /** Enables `GET /admin` (compared in constant time). Unset: admin answers 403. */
  adminToken?: string;
  /**
   * Reverse proxies in front of the service whose X-Forwarded-For is trusted for the per-client
   * rate limits (`--trust-proxy-hops`). Default 0: the connected address, the header ignored.
   */
  trustProxyHops?: number;
  /** The address clients use, e.g. `https://bench.example.org` (pages, OpenAPI `servers`). */
  publicBaseUrl: string;
  limits?: Partial<BenchLimits>;
  logger?: Logger;
  /** Deadlines and abort grace of jobs run by the worker in this process. */
  dispatcherOptions?: Omit<LocalDispatcherOptions, 'clock'>;
  /**
   * The worker in this process (the embedded default). `false`: a lab server, whose jobs run on
   * remote bench workers (docs/worker-protocol.md) and whose boards are online as their workers report.
   */
  localWorker?: LocalWorkerOptions | false;
  /**
   * A PostgreSQL database holding everything (`--database-url`): several replicas may serve the
   * same database, each with its own data directory. Absent: SQLite in the data directory.
   */
  databaseUrl?: string;
  /** `--replica-url`: where the other replicas forward the debug streams of jobs handed out here (decision 0663); a function on port 0. */
  replicaUrl?: string | (() => string | null);
  /** Connections the PostgreSQL store opens (`--database-pool-size`); default `DEFAULT_DATABASE_POOL_SIZE`. */
  databasePoolSize?: number;
  /** When set, `GET /metrics` answers only `authorization: Bearer <metricsToken>`; unset: open. */
  metricsToken?: string;
  /** The connection cap's live counts of the server this service answers on (`listen`'s), in `/metrics`; absent when it is not listening (tests). */
  connections?: ConnectionCounts;
  /** Heartbeat, offline and claim timings given to remote workers; default `defaultWorkerTimings`. */
  workerTimings?: Partial<WorkerTimings>;
  /** Checks an image against a board before it is queued. Default `checkImageForBoard`. */
  checkImage?: BenchDeps['checkImage'];
  /**
   * Human pages and discovery documents; `contactEmail` goes into ai-plugin.json (left out when
   * unset); `waitlist: false` turns the waitlist off (`--no-waitlist`, issue 31).
   */
  pages?: { contactEmail?: string; waitlist?: boolean };
  /**
   * Serves MCP at `/mcp` with this handler (`mcpHttpHandler` of lib/mcp, given by `hilbench
   * serve`: its tools call this service's own API with the caller's token); llms.txt and the
   * home page then say how to connect (docs/mcp.md).
   */
  mcp?: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
}

/** What a `backends` function receives from the service. */
export interface BackendsContext {
  clock: Clock;
  /** Board health in the service's database (table `board_health`). */
  quarantineStore: BoardHealthStore;
}

export interface BenchService {
  /** The express app; it does not listen (see `startBenchServer`). */
  app: express.Express;
  bench: Bench;
  store: BenchStore;
  /** Board health kept in the same database (what `backends` functions receive). */
  quarantineStore: BoardHealthStore;
  limits: BenchLimits;
  /** The OpenAPI 3.1 document served at `/openapi.json`. */
  openApi: Record<string, unknown>;
  getSnapshot(): Promise<BenchSnapshot>;
  /**
   * The HTTP server's `checkContinue` listener (`server.on('checkContinue', ...)`, done by
   * `startBenchServer`): a request sent with `Expect: 100-continue` is refused from its headers
   * (401, 413, and the 400 of a missing `Host`, with the normal bodies and `Connection: close`)
   * before `100 Continue` is written;
   * otherwise 100 is written and the request goes to the app.
   */
  checkContinue(req: IncomingMessage, res: ServerResponse): void;
  /** The HTTP server's `upgrade` listener: the debug streams' `Upgrade: tcp` (decision 0910); any other Upgrade ignored, the request served. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Closes every debug stream and ignored-Upgrade connection (before the HTTP server closes: upgraded connections would keep it open). */
  closeUpgrades(): void;
  /** Stops timers and jobs (left for the next start to recover) and closes the database. */
  close(): Promise<void>;
}

/**
 * Builds the bench service (spec 0.3.4, docs/bench-api.md) on `config.dataDir`, recovering the
 * state a previous run left there. Never listens: `startBenchServer` does, tests use port 0.
 */
export async function createBenchService(config: BenchServiceConfig): Promise<BenchService> {
  const clock = config.clock ?? systemClock;
  const logger = config.logger ?? consoleLogger;
  // Checked before anything is opened: bad limits fail the start with the flags named.
  const limits: BenchLimits = validateBenchLimits({ ...defaultBenchLimits, ...config.limits });
  // Owner-only and ours alone from here on: a second server on this dir is refused (decisions 0221, 0222).
  const lock = claimDataDir(config.dataDir, { service: 'bench service', logger });
  let forgetChildren: (() => void) | undefined;
  let store: BenchStore;
  let blobs: FirmwareBlobs;
  try {
    reapLeftovers(config.dataDir, logger);
    forgetChildren = registerChildLedger(childLedgerDir(config.dataDir));
    if (config.databaseUrl) {
      // Replicas share everything accepted through the database; the data dir keeps only this
      // process's scratch (child ledger, emulator work dirs).
      const shared = await PostgresBenchStore.open(config.databaseUrl, { clock: config.clock, ...(config.databasePoolSize === undefined ? {} : { poolSize: config.databasePoolSize }) }).catch((err: unknown) => {
        throw new Error(`cannot open the database at ${redactDatabaseUrl(config.databaseUrl!)}: ${(err as Error).message}`, { cause: err });
      });
      store = shared;
      blobs = shared.firmware;
    } else {
      store = new SqliteBenchStore(path.join(config.dataDir, 'bench.sqlite'));
      blobs = new FirmwareBlobStore(path.join(config.dataDir, 'firmware'));
    }
  } catch (err) {
    forgetChildren?.();
    lock.release();
    throw err;
  }
  let started: Bench | undefined;
  let stopMetrics: () => void = () => undefined;
  try {
    const quarantineStore = store.boardHealth;
    const backends =
      typeof config.backends === 'function' ? config.backends({ clock, quarantineStore }) : (config.backends ?? { mock: new MockBackend() });
    const live = new JobLive();
    // A revocation fails the worker's jobs: told to live readers and waiting claims once they exist (below).
    let announceReleased: (jobs: readonly JobRecord[]) => void = () => undefined;
    const { timings, workerAdmin, gateway, boards, protocol, localWorker, pools } = benchWorkers({
      clock,
      store,
      blobs,
      live,
      limits,
      logger,
      boards: config.boards,
      backends,
      backend: config.backend ?? 'mock',
      localWorker: config.localWorker,
      dispatcher: config.dispatcherOptions,
      databaseUrl: config.databaseUrl,
      replicaUrl: config.replicaUrl,
      dataDir: config.dataDir,
      availabilityCacheMs: config.availabilityCacheMs,
      healthCheckTimeoutMs: config.healthCheckTimeoutMs ?? DEFAULT_HEALTH_CHECK_TIMEOUT_MS,
      workerTimings: config.workerTimings,
      onJobsReleased: (jobs) => announceReleased(jobs),
    });
    const { waitlist } = store;
    announceReleased = (jobs) => {
      for (const job of jobs) {
        live.publishState(job.jobId, job.state, job);
        gateway.jobQueued(job.board);
      }
    };
    // The disk under the data directory, for health and metrics (a full one answers uploads 507).
    const disk = new DiskSpace(config.dataDir);
    const bench = new Bench({
      clock,
      store,
      blobs,
      boards,
      gateway,
      live,
      limits,
      logger,
      checkImage: config.checkImage ?? checkImageForBoard,
      waitlistCount: () => waitlist.count(),
      healthCheckTimeoutMs: config.healthCheckTimeoutMs,
      localWorker,
      pools,
      claimGraceAtStartMs: timings.claimSeconds * 1000 + MAX_DELIVERY_PAUSE_MS,
      // Lapsed claims are found within half a claim period (at most every 5 s).
      claimSweepMs: Math.min(5_000, (timings.claimSeconds * 1000) / 2),
      storageFull: async () => (await disk.look()).full,
    });
    started = bench;
    // The worker in this process reports its boards as it starts: then every board is read once
    // (offline ones are logged), and again when it matters.
    await bench.start();
    await boards.all();

    const { app, openApi, upgrades, checkContinue, stopMetrics: stopAppMetrics } = await buildBenchApp({
      config,
      clock,
      logger,
      limits,
      bench,
      store,
      live,
      disk,
      workers: { timings, workerAdmin, gateway, protocol },
    });
    stopMetrics = stopAppMetrics;

    let closed = false;
    return {
      checkContinue,
      upgrade: upgrades.upgrade,
      closeUpgrades: upgrades.close,
      app,
      bench,
      store,
      quarantineStore,
      limits,
      openApi,
      getSnapshot: async () => benchSnapshot(await bench.overview()),
      close: async () => {
        if (closed) return;
        closed = true;
        upgrades.close();
        stopMetrics();
        await bench.close();
        // Backends with timers of their own (the probe's automatic health checks) stop before the
        // database their board health lives in closes.
        for (const backend of Object.values(backends)) stopBackendTimers(backend);
        await store.close();
        forgetChildren?.();
        lock.release();
      },
    };
  } catch (err) {
    // Nothing half-started may outlive a failed start: timers, jobs, the database handle, the lock.
    await started?.close();
    await store.close();
    forgetChildren?.();
    lock.release();
    throw err;
  }
}

/**
 * What a crashed run on this data dir left (decision 0223): its emulator and probe-tool processes,
 * the scratch folders of dead processes, half-written firmware blobs. Runs under the lock.
 */
function reapLeftovers(dataDir: string, logger: Logger): void {
  const killed = reapLeftoverChildren(childLedgerDir(dataDir));
  for (const child of killed) logger.warn(`killed pid ${child.pid} left running by a crashed server on ${dataDir}: ${child.command}`);
  // Not logged: which dead processes' temp folders a start finds depends on the whole machine.
  removeDeadScratchDirs();
  removePartialFiles(path.join(dataDir, 'firmware'), PARTIAL_BLOB_PATTERN);
}

/** Calls a backend's optional `close()` (only backends with timers of their own have one). */
function stopBackendTimers(backend: Backend | undefined): void {
  void backend?.close?.();
}
