import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { getJob, submit, withFault } from './bench-job-requests.js';

/** A job that fails by its deadline still reports the timings of the phases it reached (issue 2). */

let app: BenchTestApp;
beforeEach(async () => {
  app = await startBenchTestApp();
});
afterEach(async () => {
  await app.close();
});

describe('failed jobs keep the timings of the phases they reached', () => {
  it('a job timing out while flashing reports its flash time and no run time', async () => {
    const { token } = await app.register();
    const job = await submit(app, token, { board: 'pico' }, withFault('flash-hang'));
    await app.jobStarted(job.job_id);
    await app.fake.tickAsync(2_000);
    // Default deadline: 60 s flash + 0.8 s x 4 s + 10 s margin = 73.2 s.
    app.fake.tick(71_200);
    await app.idle();
    const failed = await getJob(app, token, job.job_id);
    expect(failed.failure?.kind).toBe('timeout');
    expect(failed.timings_ms).toEqual({ queued: 0, flash: 73_200, run: null });
  });

  it('a job timing out while running reports both its flash and its run time', async () => {
    const { token } = await app.register();
    const job = await submit(app, token, { board: 'pico', uart_seconds: '0.1' }, withFault('run-hang'));
    await app.jobReaches(job.job_id, 'running');
    expect((await getJob(app, token, job.job_id)).state).toBe('running');
    // 60 s + 0.1 s x 4 s + 10 s = 70.4 s.
    app.fake.tick(70_400);
    await app.idle();
    const failed = await getJob(app, token, job.job_id);
    expect(failed.failure?.kind).toBe('timeout');
    expect(failed.timings_ms).toEqual({ queued: 0, flash: 0, run: 70_400 });
  });
});
