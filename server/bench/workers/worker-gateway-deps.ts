import type { Clock } from '../../../core/clock.js';
import type { Logger } from '../../http/logger.js';
import type { BenchStore, FinishedJob, HealthCount } from '../../storage/bench/bench-store.js';
import type { FirmwareBlobs } from '../../storage/bench/firmware-blob-store.js';
import type { BenchLimits } from '../domain/bench-limits.js';
import type { JobLive } from '../domain/job-live.js';

/** What the worker gateway (worker-gateway.ts) is built on: the service's clock, store, firmware, live results and limits. */
export interface WorkerGatewayDeps {
  clock: Clock;
  store: BenchStore;
  blobs: FirmwareBlobs;
  live: JobLive;
  limits: Pick<BenchLimits, 'maxUartBytesPerJob' | 'maxUartChunksPerJob'>;
  logger: Logger;
  /**
   * Host ms between two looks at the store by a waiting claim, for jobs queued or boards freed
   * through another replica (a shared database). Absent: no looks; everything that can make a job
   * claimable happens in this process and wakes the claim itself.
   */
  claimPollMs?: number;
  /** The address other replicas reach this one at (`--replica-url`), for the debug streams it serves (decision 0663); absent or null: none. */
  replicaUrl?: () => string | null;
  /**
   * Instances of pools of several (decision 0551): which of a worker's may be claimed now (the
   * quarantined are skipped), what a job's end says of its instance's health (the rule the store
   * applies as it ends the job, decision 0930), and what to tell when an end counted. Absent: all, nothing.
   */
  instanceHealth?: {
    unquarantined(board: string, instances: readonly string[]): Promise<string[]>;
    count: HealthCount;
    counted(finished: FinishedJob): void;
  };
}
