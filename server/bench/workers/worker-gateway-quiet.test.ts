import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { jobRecord, T0 } from '../../../test/contract/bench-store-contract.js';
import { memoryLogger } from '../../http/logger.js';
import { FirmwareBlobStore } from '../../storage/bench/firmware-blob-store.js';
import { SqliteBenchStore } from '../../storage/bench/sqlite-bench-store.js';
import { defaultBenchLimits } from '../domain/bench-limits.js';
import { JobLive } from '../domain/job-live.js';
import { QUIET_MARK_MAX_AGE_MS } from './quiet-boards.js';
import { WorkerGateway } from './worker-gateway.js';

// The quiet marks' edges (decision 0980): what comes between the store's answer and its handling
// here, and tasks other than queued jobs. No poll: a claim or fetch that skipped its look would wait for good.

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function setUp() {
  const fake = createClock(T0);
  const clock = clockFromFakeTimers(fake);
  const store = new SqliteBenchStore(':memory:');
  await store.insertAgent({ agentId: 'ag_1', label: 'one', tokenSha256: '1'.repeat(64), createdAtMs: T0 });
  const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-gateway-quiet-'));
  dirs.push(dir);
  const g = new WorkerGateway({ clock, store, blobs: new FirmwareBlobStore(dir), live: new JobLive(), limits: defaultBenchLimits, logger: memoryLogger() });
  let claims = 0;
  const claimTask = store.claimTask.bind(store);
  store.claimTask = async (...args: Parameters<typeof claimTask>) => {
    claims += 1;
    return claimTask(...args);
  };
  return { fake, store, g, link: g.linkFor('w1', { claimMs: null }), claims: () => claims };
}

const settle = () => new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
const done = { state: 'failed' as const, failure: { kind: 'timeout' as const, message: 'deadline' }, uart: null };

describe('WorkerGateway quiet marks (decision 0980)', () => {
  it('hands out at once a health check requested on the board while its job ran (a claim hands out checks too)', async () => {
    const { store, g, link, claims } = await setUp();
    await store.createJob(jobRecord({ jobId: 'job_1' }), { maxQueuedPerBoard: 4, nowMs: T0 });
    expect(await link.claim(['pico'], new AbortController().signal)).toMatchObject({ jobId: 'job_1' });
    await store.healthChecks.request({ checkId: 'hc_1', board: 'pico', workerId: 'w1', timeoutMs: 1_000, nowMs: T0 });
    g.healthChecks.requested('pico');
    await link.finish('job_1', done);
    const before = claims();
    const next = link.claim(['pico'], new AbortController().signal);
    await settle();
    expect(claims() - before).toBe(1);
    expect(await next).toMatchObject({ kind: 'health-check' });
    await g.close();
  });

  it('looks at once on the next claim when a job was queued here while the end was written', async () => {
    const { store, g, link, claims } = await setUp();
    await store.createJob(jobRecord({ jobId: 'job_1' }), { maxQueuedPerBoard: 4, nowMs: T0 });
    expect(await link.claim(['pico'], new AbortController().signal)).toMatchObject({ jobId: 'job_1' });
    const finishJob = store.finishJob.bind(store);
    store.finishJob = async (...args: Parameters<typeof finishJob>) => {
      const ended = await finishJob(...args);
      // Committed after the end's look at the queue, before its answer is handled here.
      await store.createJob(jobRecord({ jobId: 'job_2', createdAtMs: T0 + 1 }), { maxQueuedPerBoard: 4, nowMs: T0 + 1 });
      g.jobQueued('pico');
      return ended;
    };
    await link.finish('job_1', done);
    const before = claims();
    const next = link.claim(['pico'], new AbortController().signal);
    await settle();
    expect(claims() - before).toBe(1);
    expect(await next).toMatchObject({ jobId: 'job_2' });
    await g.close();
  });

  it('looks first on a claim that comes long after the end that marked its board (its worker was away: others may have queued meanwhile)', async () => {
    const { fake, store, g, link, claims } = await setUp();
    await store.createJob(jobRecord({ jobId: 'job_1' }), { maxQueuedPerBoard: 4, nowMs: T0 });
    expect(await link.claim(['pico'], new AbortController().signal)).toMatchObject({ jobId: 'job_1' });
    await link.finish('job_1', done);
    fake.tick(QUIET_MARK_MAX_AGE_MS + 1);
    // Queued through another replica while the worker was away: nothing here hears it.
    await store.createJob(jobRecord({ jobId: 'job_2', createdAtMs: T0 + 1 }), { maxQueuedPerBoard: 4, nowMs: T0 + 1 });
    const before = claims();
    const next = link.claim(['pico'], new AbortController().signal);
    await settle();
    expect(claims() - before).toBe(1);
    expect(await next).toMatchObject({ jobId: 'job_2' });
    await g.close();
  });

  it("looks at once on a running job's first input fetch when input was queued here while running was written", async () => {
    const { store, g, link } = await setUp();
    await store.createJob(jobRecord({ jobId: 'job_1' }), { maxQueuedPerBoard: 4, nowMs: T0 });
    expect(await link.claim(['pico'], new AbortController().signal)).toMatchObject({ jobId: 'job_1' });
    const markJobRunning = store.markJobRunning.bind(store);
    store.markJobRunning = async (...args: Parameters<typeof markJobRunning>) => {
      const status = await markJobRunning(...args);
      // Queued after running's UPDATE read the job, before its answer is handled here.
      await store.serialInput.enqueue('job_1', new TextEncoder().encode('hi'), { nowMs: T0, maxPendingBytes: 64 });
      g.inputQueued('job_1');
      return status;
    };
    expect(await link.running('job_1')).toEqual({ stop: null });
    const fetched = link.input('job_1', 0, new AbortController().signal);
    let answered = false;
    void fetched.then(() => (answered = true));
    await settle();
    expect(answered).toBe(true);
    expect((await fetched).inputs.map((i) => i.seq)).toEqual([1]);
    await g.close();
  });
});
