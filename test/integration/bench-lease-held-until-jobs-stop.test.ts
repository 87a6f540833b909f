import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClock } from '@sinonjs/fake-timers';
import type { WorkerLink } from '../../harness/worker/worker-link.js';
import { type BenchTestApp, startBenchTestApp, TEST_START_MS } from '../support/bench-test-app.js';
import { bearer, getJob, picoElf, submit, withFault } from './bench-job-requests.js';

/**
 * A lease is exclusive until every job of its session has stopped: ending or expiring a session
 * stops its jobs, and a board still held by a stopping job answers 409 with Retry-After from the
 * job's deadline (issue 2).
 */

let app: BenchTestApp;
beforeEach(async () => {
  app = await startBenchTestApp();
});
afterEach(async () => {
  await app.close();
});

describe('a lease is exclusive until every job of its session has stopped', () => {
  async function openSession(token: string, fields: Record<string, string>) {
    return app.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams(fields) });
  }

  async function aliceWithTwoJobs(idleSeconds: string) {
    const alice = await app.register('alice');
    const opened = await openSession(alice.token, { board: 'pico', idle_seconds: idleSeconds });
    expect(opened.status).toBe(200);
    const sid = ((await opened.json()) as { session_id: string }).session_id;
    const hung = await submit(app, alice.token, { board: 'pico', session: sid, uart_seconds: '0.1' }, withFault('run-hang'));
    await app.jobReaches(hung.job_id, 'running');
    const hello = await submit(app, alice.token, { board: 'pico', session: sid }, picoElf());
    expect((await getJob(app, alice.token, hung.job_id)).state).toBe('running');
    return { alice, sid, hung, hello };
  }

  it('ending the session cancels its queued and running jobs; the next session runs alone', async () => {
    const { alice, sid, hung, hello } = await aliceWithTwoJobs('90');
    const bob = await app.register('bob');
    app.fake.tick(5_000);
    const ended = await app.request(`/api/v1/sessions/${sid}/end`, { method: 'POST', headers: bearer(alice.token) });
    expect(ended.status).toBe(200);
    await app.idle();

    expect(await getJob(app, alice.token, hello.job_id)).toMatchObject({
      state: 'failed',
      started_at: null,
      failure: { kind: 'cancelled', message: `cancelled before it started: session ${sid} ended at 2026-01-01T00:00:05.000Z` },
    });
    expect(await getJob(app, alice.token, hung.job_id)).toMatchObject({
      state: 'failed',
      failure: { kind: 'cancelled', message: `job ${hung.job_id} cancelled: session ${sid} ended at 2026-01-01T00:00:05.000Z` },
    });
    const bobs = await openSession(bob.token, { board: 'pico' });
    expect(bobs.status).toBe(200);
    // Nothing of alice's runs under bob's lease, however long he holds it.
    app.fake.tick(60_000);
    await app.idle();
    expect((await getJob(app, alice.token, hello.job_id)).state).toBe('failed');
    expect(app.logger.lines.filter((l) => l.startsWith('error:'))).toEqual([]);
  });

  it('expiry (fake clock) waits while its jobs are unfinished, then frees the board idle_seconds after the last one', async () => {
    // Decision 0211: a session's own jobs keep it alive, so it never expires under them.
    const { alice, sid, hung, hello } = await aliceWithTwoJobs('10');
    const bob = await app.register('bob');
    await app.fake.tickAsync(10_000);
    expect((await openSession(bob.token, { board: 'pico' })).status).toBe(409);
    // The hung job's deadline: 60 s flash + 0.1 s x 4 s + 10 s margin = 70.4 s; the next job then runs at once.
    app.fake.tick(60_400);
    await app.idle();
    expect((await getJob(app, alice.token, hung.job_id)).failure?.kind).toBe('timeout');
    expect((await getJob(app, alice.token, hello.job_id)).state).toBe('done');
    await app.fake.tickAsync(9_999);
    expect((await openSession(bob.token, { board: 'pico' })).status).toBe(409);
    await app.fake.tickAsync(1);
    expect(app.logger.lines).toContain(`info: session ${sid} on pico expired; the board is free`);
    expect((await openSession(bob.token, { board: 'pico' })).status).toBe(200);
  });
});

/** A local dispatcher whose cancellations land only when the test says: a backend slow to stop. */
/** Holds back the stop the server sends a running job, until `deliver()`: a backend slow to stop. */
class SlowToStopLink {
  readonly pending: Array<{ jobId: string; reason: string }> = [];
  private readonly deliveries: Array<() => void> = [];

  readonly decorate = (link: WorkerLink): WorkerLink => ({
    ...link,
    heartbeat: async (jobId) => {
      const control = await link.heartbeat(jobId);
      return this.pending.some((p) => p.jobId === jobId) ? { stop: null } : control;
    },
    watch: (jobId, listener) =>
      link.watch!(jobId, (push) => {
        if (push.kind !== 'stop') return listener(push);
        this.pending.push({ jobId, reason: push.reason });
        this.deliveries.push(() => listener(push));
      }),
  });

  deliver(): void {
    for (const deliver of this.deliveries.splice(0)) deliver();
    this.pending.length = 0;
  }
}

describe('a board held by a job answers 409 with Retry-After from the job deadline', () => {
  it('after the session ends, its running job holds the board until it has stopped', async () => {
    await app.close();
    const fake = createClock(TEST_START_MS);
    const slow = new SlowToStopLink();
    app = await startBenchTestApp({ fake, localWorker: { decorateLink: slow.decorate } });
    const alice = await app.register('alice');
    const bob = await app.register('bob');
    const sid = ((await (await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(alice.token), body: new URLSearchParams({ board: 'pico' }) })).json()) as { session_id: string }).session_id;
    const hung = await submit(app, alice.token, { board: 'pico', session: sid, uart_seconds: '0.1' }, withFault('run-hang'));
    await app.jobReaches(hung.job_id, 'running');
    app.fake.tick(5_000);
    expect((await app.request(`/api/v1/sessions/${sid}/end`, { method: 'POST', headers: bearer(alice.token) })).status).toBe(200);
    expect(slow.pending).toEqual([{ jobId: hung.job_id, reason: `session ${sid} ended at 2026-01-01T00:00:05.000Z` }]);

    const blocked = await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(bob.token), body: new URLSearchParams({ board: 'pico' }) });
    expect(blocked.status).toBe(409);
    // Past its expected end (running at 0 for 0.1 s; now is 5 s) it is asked about again in 5 s;
    // deadline: flashing at 0 + 60 s flash + 0.1 s x 4 s + 10 s margin = 70.4 s.
    expect(blocked.headers.get('retry-after')).toBe('5');
    expect(await blocked.json()).toEqual({
      detail:
        'board pico is busy: agent "alice" leased it for a flash job, until that job finishes, expected in about 5 s (its capture window), ' +
        'at the latest 2026-01-01T00:01:10.400Z (its deadline) (retry_after_seconds=5)',
    });

    slow.deliver();
    await app.idle();
    expect((await getJob(app, alice.token, hung.job_id)).failure?.kind).toBe('cancelled');
    expect((await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(bob.token), body: new URLSearchParams({ board: 'pico' }) })).status).toBe(200);
  });
});
