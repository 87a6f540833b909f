import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers, systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { createWorkerToken as createToken, type LabWorker, startLabWorker } from '../support/lab-worker.js';
import { bearer, getJob, picoElf, submit, withFault } from './bench-job-requests.js';

/**
 * A lab server with no worker of its own (issue 10): workers are credentials an administrator
 * creates; a worker dials out, announces its boards, claims jobs for them over HTTP and reports
 * UART and outcomes; a worker that goes silent loses its boards and its running job, with the
 * reason and the UART it reported.
 */

const ADMIN = 'admin-secret';
let app: BenchTestApp;
const workers: LabWorker[] = [];

afterEach(async () => {
  for (const w of workers.splice(0)) await w.close();
  await app?.close();
});

async function labServer() {
  app = await startBenchTestApp({ localWorker: false, adminToken: ADMIN });
  return app;
}

const createWorkerToken = (label: string) => createToken(app.request, { adminToken: ADMIN, label });

async function startWorker(token: string, boardIds: string[]): Promise<LabWorker> {
  const worker = await startLabWorker({ serverUrl: app.url, token, clock: clockFromFakeTimers(app.fake), boards: boardIds });
  workers.push(worker);
  return worker;
}

async function boardStatus(id: string): Promise<{ status: string; offline_reason?: string | null }> {
  const res = await app.request('/api/v1/boards');
  const { boards } = (await res.json()) as { boards: Array<{ id: string; status: string; offline_reason?: string | null }> };
  return boards.find((b) => b.id === id)!;
}

describe('a lab server and its remote bench workers', () => {
  it('runs an agent’s job on the worker that serves the board, over HTTP, with the UART it printed', async () => {
    await labServer();
    expect((await boardStatus('pico')).status).toBe('offline');
    const { token } = await createWorkerToken('pi-bench-1');
    await startWorker(token, ['pico']);
    app.fake.tick(5_000); // past the availability cache
    expect((await boardStatus('pico')).status).toBe('free');
    expect(await boardStatus('uno')).toMatchObject({ status: 'offline', offline_reason: 'no bench worker serves board uno' });

    const alice = await app.register('alice');
    const job = await submit(app, alice.token, { board: 'pico', uart_seconds: '0.3' }, picoElf());
    await app.jobReaches(job.job_id, 'done', 'failed');
    const done = await getJob(app, alice.token, job.job_id);
    expect(done).toMatchObject({ state: 'done', failure: null });
    expect((done.uart as { text: string }).text).toMatch(/^hilbench-mock: reset pico\r\n.*tick 3\r\n$/s);

    const listed = (await (await app.request('/admin/workers', { headers: { 'x-admin-token': ADMIN } })).json()) as { workers: unknown[] };
    expect(listed.workers).toMatchObject([{ label: 'pi-bench-1', online: true, revoked_at: null, boards: [{ board: 'pico', backend: 'mock', available: true }] }]);
  });

  it('never takes an agent token as a worker token, nor the other way round; a revoked worker is refused', async () => {
    await labServer();
    const alice = await app.register('alice');
    const { token, worker_id } = await createWorkerToken('pi');
    const announce = (t: string) =>
      app.request('/api/v1/worker/announce', { method: 'POST', headers: { ...bearer(t), 'content-type': 'application/json' }, body: JSON.stringify({ boards: [] }) });
    const asAgent = await announce(alice.token);
    expect(asAgent.status).toBe(401);
    expect(((await asAgent.json()) as { detail: string }).detail).toMatch(/expected "Bearer hbw_\.\.\." \(a worker token; agent tokens do not work here\)/);
    const asWorker = await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams({ board: 'pico' }) });
    expect(asWorker.status).toBe(401);
    expect((await announce(token)).status).toBe(200);
    expect((await app.request(`/admin/workers/${worker_id}/revoke`, { method: 'POST', headers: { 'x-admin-token': ADMIN } })).status).toBe(200);
    const revoked = await announce(token);
    expect(revoked.status).toBe(403);
    expect(((await revoked.json()) as { detail: string }).detail).toMatch(new RegExp(`^worker ${worker_id} was revoked at `));
    expect((await app.request('/admin/workers', { method: 'POST', body: new URLSearchParams({ label: 'x' }) })).status).toBe(401);
  });

  it('revoking a worker fails its running job at once, and a client waiting on the job hears it then', async () => {
    await labServer();
    const { worker_id, token } = await createWorkerToken('pi-revoked');
    await startWorker(token, ['pico']);
    const alice = await app.register('alice');
    app.fake.tick(5_000);
    const job = await submit(app, alice.token, { board: 'pico', uart_seconds: '0.1' }, withFault('run-hang'));
    await app.jobReaches(job.job_id, 'running');
    // Waits up to 30 s of the fake clock, which nobody ticks: only the revocation's news can answer it.
    const waiting = app.request(`/api/v1/jobs/${job.job_id}?wait=30`, { headers: bearer(alice.token) });
    expect((await app.request(`/admin/workers/${worker_id}/revoke`, { method: 'POST', headers: { 'x-admin-token': ADMIN } })).status).toBe(200);
    const answered = (await (await waiting).json()) as { state: string; failure: { kind: string; message: string } };
    expect(answered).toMatchObject({ state: 'failed', failure: { kind: 'interrupted', message: expect.stringMatching(/was revoked by an administrator/) } });
  });

  it('lets a worker claim only boards it announced, and only boards of the catalog', async () => {
    await labServer();
    const { token } = await createWorkerToken('pi');
    const post = (route: string, body: unknown) =>
      app.request(route, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const unknown = await post('/api/v1/worker/announce', { boards: [{ board: 'no-such-board', backend: 'mock', available: true }] });
    expect(unknown.status).toBe(403);
    expect((await post('/api/v1/worker/announce', { boards: [{ board: 'pico', backend: 'mock', available: true }] })).status).toBe(200);
    const foreign = await post('/api/v1/worker/claim', { boards: ['uno'], wait_seconds: 0 });
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as { detail: string }).detail).toMatch(/did not announce board uno/);
    const bad = await post('/api/v1/worker/claim', { boards: [], wait_seconds: 99 });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { detail: Array<{ loc: unknown[] }> }).detail.map((d) => d.loc)).toEqual([
      ['body', 'boards'],
      ['body', 'wait_seconds'],
    ]);
  });

  it('lets a worker touch only its own jobs and boards: another worker’s job is answered like a missing one, and stays its own', async () => {
    await labServer();
    const owner = await createWorkerToken('pi-pico');
    await startWorker(owner.token, ['pico']);
    const intruder = await createWorkerToken('pi-uno');
    await startWorker(intruder.token, ['uno']);
    app.fake.tick(5_000);
    const alice = await app.register('alice');
    const job = await submit(app, alice.token, { board: 'pico', uart_seconds: '0.1' }, withFault('run-hang'));
    await app.jobReaches(job.job_id, 'running');

    const asIntruder = (method: string, route: string, body?: unknown) =>
      app!.request(route, {
        method,
        headers: { ...bearer(intruder.token), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const capture = { time_base: 'wall', clock_source: null, dropped_bytes: 0, chunks: [{ at_ns: 0, base64: Buffer.from('forged').toString('base64') }] };
    const jobRoute = (part: string) => `/api/v1/worker/jobs/${job.job_id}/${part}`;
    const attempts: Array<[string, string, unknown]> = [
      ['GET', jobRoute('firmware'), undefined],
      ['POST', jobRoute('running'), undefined],
      ['POST', jobRoute('heartbeat'), undefined],
      ['POST', jobRoute('uart'), { offset: 0, ...capture }],
      ['POST', jobRoute('input'), { written_through: 0, wait_seconds: 0 }],
      ['POST', jobRoute('finish'), { outcome: { state: 'done', uart: capture, stop: { reason: 'elapsed', elapsed_ns: 1 }, flash_ms: 1, run_ms: 1 } }],
    ];
    for (const [method, route, body] of attempts) {
      const res = await asIntruder(method, route, body);
      expect(res.status, `${method} ${route}`).toBe(404);
      expect(await res.json()).toEqual({ detail: `job ${job.job_id} not found among this worker's jobs` });
    }
    // Nor may it write the health of a board it did not announce.
    const health = await asIntruder('POST', '/api/v1/worker/boards/pico/health', { consecutive_failures: 0, last_failure: null, quarantine: null });
    expect(health.status).toBe(403);
    // The job is still the owner's, untouched.
    const stored = await app.server.service.store.getJob(job.job_id);
    expect(stored).toMatchObject({ state: 'running', workerId: owner.worker_id, uart: null });
  });

  it('fails the running job of a worker that went silent, with the reason and its UART, and takes the board offline until a worker returns', async () => {
    await labServer();
    const { token } = await createWorkerToken('pi-flaky');
    const worker = await startWorker(token, ['pico']);
    const alice = await app.register('alice');
    app.fake.tick(5_000);
    const job = await submit(app, alice.token, { board: 'pico', uart_seconds: '0.1' }, withFault('run-hang'));
    await app.jobReaches(job.job_id, 'running');
    // The worker vanishes (as with kill -9: no outcome, no more heartbeats).
    await worker.close();
    for (let i = 0; i < 8; i++) await app.fake.tickAsync(5_000);
    await app.jobReaches(job.job_id, 'failed');
    const failed = await getJob(app, alice.token, job.job_id);
    expect(failed.failure).toMatchObject({ kind: 'interrupted', message: expect.stringMatching(/^worker \S+ stopped answering while this job was running/) });
    expect(await boardStatus('pico')).toMatchObject({
      status: 'offline',
      offline_reason: expect.stringMatching(/^worker pi-flaky \(wk_\S+\) missed its heartbeats: last heard from at 2026-01-01T00:00:/),
    });

    await startWorker(token, ['pico']);
    await app.fake.tickAsync(5_000);
    await waitUntil(systemClock, async () => ((await boardStatus('pico')).status === 'free' ? true : undefined), { timeoutMs: 20_000, describe: 'pico free again' });
  });

  it('fails a job no worker starts within maxQueueWaitSeconds as unavailable, with the reason', async () => {
    await labServer();
    const { token } = await createWorkerToken('pi-gone');
    const worker = await startWorker(token, ['pico']);
    app.fake.tick(5_000);
    // The worker goes away before the job is submitted: nobody will claim it.
    await worker.close();
    const alice = await app.register('alice');
    const job = await submit(app, alice.token, { board: 'pico', uart_seconds: '0.1' }, picoElf());
    await app.fake.tickAsync(899_000);
    expect((await getJob(app, alice.token, job.job_id)).state).toBe('queued');
    await app.fake.tickAsync(10_000);
    await app.jobReaches(job.job_id, 'failed');
    expect((await getJob(app, alice.token, job.job_id)).failure).toEqual({
      kind: 'unavailable',
      message: 'no worker started this job within 900 s of its submission (its board had no worker, or its queue did not move); submit it again',
    });
  });
});
