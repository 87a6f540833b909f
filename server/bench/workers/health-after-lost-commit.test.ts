import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { jobRecord, T0 } from '../../../test/contract/bench-store-contract.js';
import { benchStoreDialects } from '../../../test/support/bench-store-dialects.js';
import { memoryLogger } from '../../http/logger.js';
import type { BenchStore } from '../../storage/bench/bench-store.js';
import { DatabaseUnavailableError } from '../../storage/storage-faults.js';
import { defaultBenchLimits } from '../domain/bench-limits.js';
import { countInstanceHealth, INSTANCE_QUARANTINE_AFTER_FAILURES, InstanceHealth } from '../domain/instance-health.js';
import { JobLive } from '../domain/job-live.js';
import { WorkerGateway } from './worker-gateway.js';

/**
 * A job's end whose COMMIT reached the database while its answer did not (PostgreSQL's connection
 * cut after COMMIT was sent: `PgDatabase.writeRaw` throws, the worker hears 503 and sends the
 * outcome again, decision 0900). The end is recorded; the instance's health must be counted with it,
 * once (decision 0930). Before, the count ran after the end and only when the call ended the job:
 * the first call threw before counting, the second found the job ended, and the failure was never
 * counted, so an instance failing every job was never quarantined.
 */

const POOL_OF_TWO = [{ board: 'pico', backend: 'sim', available: true, reason: null, poolSize: 2 }];
const INSTANCES = ['pico.1@w1', 'pico.2@w1'];
const FLASH_FAILED = { state: 'failed' as const, failure: { kind: 'flash-failed' as const, message: 'Error: open failed' }, uart: null };

/** `store` with its next `finishJob` committed and its answer lost, as the worker's first try sees it. */
function loseNextFinishAnswer(store: BenchStore): void {
  const finishJob = store.finishJob.bind(store);
  store.finishJob = async (...args: Parameters<typeof finishJob>) => {
    store.finishJob = finishJob;
    await finishJob(...args);
    throw new DatabaseUnavailableError('the connection was lost after COMMIT was sent (the test)', 1);
  };
}

describe.each(benchStoreDialects)('instance health after a lost COMMIT answer: %s', (_name, open) => {
  it('counts each failure once when the worker sends the outcome again, and quarantines the instance after the count', { timeout: 60_000 }, async () => {
    const { store, close } = await open();
    const fake = createClock(T0);
    const clock = clockFromFakeTimers(fake);
    const health = new InstanceHealth({ store });
    const gateway = new WorkerGateway({
      clock,
      store,
      blobs: { put: async () => undefined, get: async () => undefined },
      live: new JobLive(),
      limits: defaultBenchLimits,
      logger: memoryLogger(),
      instanceHealth: {
        // As PoolInstances.unquarantined: claims skip the quarantined instances.
        unquarantined: async (board, instances) => {
          const quarantines = await health.quarantines(board, instances);
          return instances.filter((i) => !quarantines.has(i));
        },
        count: countInstanceHealth,
        counted: () => undefined,
      },
    });
    try {
      await store.insertAgent({ agentId: 'ag_1', label: 'one', tokenSha256: '1'.repeat(64), createdAtMs: T0 });
      const link = gateway.linkFor('w1', { claimMs: 30_000, reports: POOL_OF_TWO });
      for (let n = 1; n <= INSTANCE_QUARANTINE_AFTER_FAILURES; n++) {
        const jobId = `job_${n}`;
        expect(await store.createJob(jobRecord({ jobId, instance: 'pico.2@w1', createdAtMs: T0 + n }), { maxQueuedPerBoard: 4, nowMs: T0 + n })).toMatchObject({ kind: 'created' });
        expect(await link.claim(['pico'], new AbortController().signal)).toMatchObject({ jobId });
        loseNextFinishAnswer(store);
        await expect(link.finish(jobId, FLASH_FAILED), 'the first try hears the database away').rejects.toThrow(DatabaseUnavailableError);
        expect(await store.getJob(jobId), 'the end was committed').toMatchObject({ state: 'failed' });
        // The worker's retry (http-worker-link.ts sends the outcome again after a 503).
        await link.finish(jobId, FLASH_FAILED);
        expect((await health.get('pico.2@w1')).consecutiveFailures, `failures counted after job ${n}`).toBe(n);
      }
      const quarantines = await health.quarantines('pico', INSTANCES);
      expect([...quarantines.keys()], 'the instance failing every job is out of service').toEqual(['pico.2@w1']);
      expect(quarantines.get('pico.2@w1')?.reason).toContain('Error: open failed');
      // Claims follow the count: a job asked for on the quarantined instance waits; the other instance's runs.
      await store.createJob(jobRecord({ jobId: 'job_waits', instance: 'pico.2@w1', createdAtMs: T0 + 10 }), { maxQueuedPerBoard: 4, nowMs: T0 + 10 });
      await store.createJob(jobRecord({ jobId: 'job_runs', instance: 'pico.1@w1', createdAtMs: T0 + 11 }), { maxQueuedPerBoard: 4, nowMs: T0 + 11 });
      const bounded = gateway.linkFor('w1', { claimMs: 30_000, claimWaitMs: 1_000, reports: POOL_OF_TWO });
      expect(await bounded.claim(['pico'], new AbortController().signal)).toMatchObject({ jobId: 'job_runs' });
      const next = bounded.claim(['pico'], new AbortController().signal);
      await fake.tickAsync(1_000);
      expect(await next, 'a job was handed out on the quarantined instance').toBeUndefined();
    } finally {
      await gateway.close();
      await close();
    }
  });
});
