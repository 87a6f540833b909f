import { randomBytes } from 'node:crypto';
import type { Board } from '../../../boards/board-schema.js';
import type { FirmwareImage } from '../../../backends/backend.js';
import type { Clock } from '../../../core/clock.js';
import type { Logger } from '../../http/logger.js';
import type { BenchStore } from '../../storage/bench/bench-store.js';
import type { FirmwareBlobs } from '../../storage/bench/firmware-blob-store.js';
import type { BenchLimits } from './bench-limits.js';
import type { JobLive } from './job-live.js';
import type { LiveBoards } from './live-boards.js';
import type { LocalWorkerSetup } from '../workers/local-worker.js';
import type { PoolInstances } from './pool-instances.js';
import type { WorkerGateway } from '../workers/worker-gateway.js';

export interface BenchDeps {
  clock: Clock;
  store: BenchStore;
  blobs: FirmwareBlobs;
  /** Every board with its availability as its worker last reported it (live-boards.ts). */
  boards: LiveBoards;
  /** The server's side of the worker protocol: workers claim the store's jobs through it. */
  gateway: WorkerGateway;
  /** Jobs as they run in this process: UART chunks, state changes, serial input (job-live.ts). */
  live: JobLive;
  limits: BenchLimits;
  logger: Logger;
  /** Throws `BackendError('bad-image', ...)` when `image` cannot run on `board` (backends/image-check.ts). */
  checkImage: (image: FirmwareImage, board: Board) => void;
  /** Entries on the waitlist (owned by the pages), for the snapshot totals. */
  waitlistCount: () => Promise<number>;
  /** Host ms an administrator's health check may take before it is aborted. Default 120 000. */
  healthCheckTimeoutMs?: number;
  /**
   * Host ms the worker allows a job of `uartSeconds` from leaving the queue to its end
   * (`BenchWorker.deadlineMs`): the `Retry-After` of a board held by a job. Unknown (no worker in
   * this process to ask): `Retry-After: 5`.
   */
  jobDeadlineMs?: (uartSeconds: number, boardId: string) => number;
  /**
   * Host ms from a start during which the remote workers' claims on running jobs cannot lapse:
   * while the server was down they could neither renew them nor deliver an outcome. Default 0.
   */
  claimGraceAtStartMs?: number;
  /** Host ms between two sweeps for jobs whose remote worker went silent. Default 5 000. */
  claimSweepMs?: number;
  /** Runs a worker in this process on its backends (the embedded default); absent: remote workers only. */
  localWorker?: LocalWorkerSetup;
  /** The instances of each board's pool as workers report them (decision 0510); absent: every board is its one instance. */
  pools?: PoolInstances;
  /** Whether the disk under the data directory is full (`DiskSpace`), for the health answer; absent: never. */
  storageFull?: () => Promise<boolean>;
}

/** Random public identifier: `prefix` + 16 random bytes, base64url. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(16).toString('base64url')}`;
}
