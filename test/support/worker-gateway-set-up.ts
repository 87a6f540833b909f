import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClock } from '@sinonjs/fake-timers';
import { afterEach } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { T0 } from '../contract/bench-store-contract.js';
import { memoryLogger } from '../../server/http/logger.js';
import { FirmwareBlobStore } from '../../server/storage/bench/firmware-blob-store.js';
import { SqliteBenchStore } from '../../server/storage/bench/sqlite-bench-store.js';
import type { FinishedJob } from '../../server/storage/bench/bench-store.js';
import { defaultBenchLimits } from '../../server/bench/domain/bench-limits.js';
import { countInstanceHealth } from '../../server/bench/domain/instance-health.js';
import { JobLive } from '../../server/bench/domain/job-live.js';
import { WorkerGateway } from '../../server/bench/workers/worker-gateway.js';

/** Firmware dirs made by `setUpWorkerGateway` in the running test, removed after it. */
const dirs: string[] = [];
// Registered when a test file imports this module, so it runs after each of that file's tests.
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * The worker gateway's tests' set-up: a fake clock at `T0` (the store contract's), an in-memory
 * SQLite store holding agent `ag_1`, a firmware store in a temporary dir (removed after the test),
 * the live results, and the instance health a service gives the gateway (nothing quarantined; each
 * counted end recorded in `healthCounted`). `gateway(claimPollMs?)` builds a gateway on them (two
 * for two replicas on one store); `claims()` counts the store's `claimTask` calls, each a look at
 * the queue.
 */
export async function setUpWorkerGateway() {
  const fake = createClock(T0);
  const clock = clockFromFakeTimers(fake);
  const store = new SqliteBenchStore(':memory:');
  await store.insertAgent({ agentId: 'ag_1', label: 'one', tokenSha256: '1'.repeat(64), createdAtMs: T0 });
  const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-gateway-'));
  dirs.push(dir);
  const blobs = new FirmwareBlobStore(dir);
  const live = new JobLive();
  const healthCounted: Array<{ jobId: string; failures: number | undefined }> = [];
  const instanceHealth = {
    unquarantined: async (_board: string, instances: readonly string[]) => [...instances],
    count: countInstanceHealth,
    counted: ({ job, health }: FinishedJob) => healthCounted.push({ jobId: job.jobId, failures: health?.after.consecutiveFailures }),
  };
  let claims = 0;
  const claimTask = store.claimTask.bind(store);
  store.claimTask = async (...args: Parameters<typeof claimTask>) => {
    claims += 1;
    return claimTask(...args);
  };
  const gateway = (claimPollMs?: number) => new WorkerGateway({ clock, store, blobs, live, limits: defaultBenchLimits, logger: memoryLogger(), claimPollMs, instanceHealth });
  return { fake, store, live, gateway, healthCounted, claims: () => claims };
}

/** Two turns of the event loop: what a gateway does at once on a call has been done (a claim's look, a wake). */
export const settle = () => new Promise((resolve) => setImmediate(() => setImmediate(resolve)));

/** A job's end as a worker reports it when its deadline passed. */
export const endedByDeadline = { state: 'failed' as const, failure: { kind: 'timeout' as const, message: 'deadline' }, uart: null };
