import { afterEach, describe, expect, it } from 'vitest';
import { MockBackend } from '../../backends/mock/mock-backend.js';
import { clockFromFakeTimers, systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { createWorkerToken, type LabWorker, startLabWorker } from '../support/lab-worker.js';
import { makeElf } from '../support/make-elf.js';
import { bearer, flash } from './bench-job-requests.js';
import { deferred, FakeBenchBackend } from './board-health-fake-backend.js';

/**
 * Board health of boards on remote bench workers (decision 0421), over real HTTP on loopback: the
 * worker's backend (FakeBenchBackend, kept as the probe backend keeps it) counts failures and
 * quarantines through the server's store, every view shows it, a worker restart keeps it, an
 * administrator's release reaches the worker, and a health check runs on the worker that holds
 * the board while it holds the board on the server.
 */

const ADMIN = 'admin-secret';
const QUARANTINE_REASON = 'quarantined after 3 consecutive infrastructure failures: flash on pico failed (exit status 1); last error: ** Programming Failed **';
const picoElf = makeElf({ segments: [{ paddr: 0x1000_0000, data: new Uint8Array(64).fill(7) }] });

let app: BenchTestApp;
const workers: LabWorker[] = [];
afterEach(async () => {
  for (const w of workers.splice(0)) await w.close();
  await app?.close();
});

async function labServer(): Promise<string> {
  app = await startBenchTestApp({ localWorker: false, adminToken: ADMIN, healthCheckTimeoutMs: 60_000 });
  return (await createWorkerToken(app.request, { adminToken: ADMIN, label: 'pi-probe' })).token;
}

/** A worker whose pico is a fake probe bench keeping health through the server; `keepsHealth: false` serves it on the mock. */
async function startWorker(token: string, options: { keepsHealth?: boolean; withHealthCheck?: boolean } = {}): Promise<{ bench: () => FakeBenchBackend }> {
  const clock = clockFromFakeTimers(app.fake);
  let bench: FakeBenchBackend | undefined;
  const worker = await startLabWorker({
    serverUrl: app.url,
    token,
    clock,
    boards: ['pico'],
    backends:
      options.keepsHealth === false
        ? { mock: new MockBackend() }
        : ({ quarantineStore }) => {
            bench = new FakeBenchBackend({ clock, store: quarantineStore, attached: ['pico'], quarantineAfterFailures: 3, withHealthCheck: options.withHealthCheck ?? true });
            return { probe: bench };
          },
    choice: options.keepsHealth === false ? 'mock' : 'probe',
  });
  workers.push(worker);
  await app.fake.tickAsync(5_000); // past the availability cache
  return { bench: () => bench! };
}

async function pico(): Promise<{ status: string; offline_reason: string | null }> {
  const { boards } = (await (await app.request('/api/v1/boards')).json()) as { boards: Array<{ id: string; status: string; offline_reason: string | null }> };
  return boards.find((b) => b.id === 'pico')!;
}

async function adminHealth(): Promise<unknown> {
  const admin = (await (await app.request('/admin', { headers: { 'x-admin-token': ADMIN } })).json()) as { boards: Array<{ id: string; health: unknown }> };
  return admin.boards.find((b) => b.id === 'pico')!.health;
}

/** What the worker last reported about pico, as the server stored it. */
async function workerReport(): Promise<{ available: boolean; quarantined?: boolean }> {
  const [worker] = await app.server.service.store.workers.list();
  return worker!.boards.find((b) => b.board === 'pico')!;
}

const adminPost = (route: string) => app.request(route, { method: 'POST', headers: { 'x-admin-token': ADMIN } });

async function failJobs(token: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const res = await flash(app, token, { board: 'pico', uart_seconds: '0.2' }, picoElf);
    expect(res.status, await res.clone().text()).toBe(200);
    const { job_id: jobId } = (await res.json()) as { job_id: string };
    await app.jobReaches(jobId, 'failed');
  }
}

/** Waits (advancing the fake clock by heartbeats, giving real I/O real time) until pico's status is `status`. */
async function picoBecomes(status: string): Promise<void> {
  await waitUntil(systemClock, async () => ((await pico()).status === status ? true : undefined), {
    timeoutMs: 20_000,
    pollMs: 20,
    describe: `pico ${status}`,
    pause: async (ms) => {
      await app.fake.tickAsync(5_000);
      await new Promise((r) => setTimeout(r, ms));
    },
  });
}

describe('board health of a board on a remote worker', () => {
  it('quarantines it after 3 infrastructure failures, shows it on every view from the store, and keeps it across a worker restart', async () => {
    const token = await labServer();
    const worker = await startWorker(token);
    const alice = await app.register('alice');
    worker.bench().brokenProbe.add('pico');
    await failJobs(alice.token, 2);
    expect(await adminHealth()).toMatchObject({ backend: 'probe', consecutive_failures: 2, quarantined: false });
    expect((await pico()).status).toBe('free');
    const healthOf = async () => ((await (await app.request('/api/v1/health')).json()) as { status: string; boards: { online: number } });
    expect(await healthOf()).toMatchObject({ status: 'ok', boards: { online: 1 } });
    await failJobs(alice.token, 1);
    expect(await healthOf()).toMatchObject({ status: 'degraded', boards: { online: 0 } });
    // At once, not at the worker's next heartbeat: the record is the store's.
    expect(await pico()).toMatchObject({ status: 'offline', offline_reason: QUARANTINE_REASON });
    expect(await adminHealth()).toEqual({
      backend: 'probe',
      consecutive_failures: 3,
      last_failure: 'flash on pico failed (exit status 1); last error: ** Programming Failed **',
      quarantined: true,
      quarantined_since: expect.stringMatching(/^2026-01-01T/),
      quarantine_reason: QUARANTINE_REASON,
    });
    const stats = (await (await app.request('/api/v1/stats')).json()) as { boards: Array<{ id: string; offline_reason: string | null }> };
    expect(stats.boards.find((b) => b.id === 'pico')!.offline_reason).toBe(QUARANTINE_REASON);
    const refused = await flash(app, alice.token, { board: 'pico', uart_seconds: '0.2' }, picoElf);
    expect(refused.status).toBe(503);

    // The worker restarts with a fresh backend: the quarantine is the server's, not the worker's memory.
    const [first] = workers.splice(0);
    await first!.close();
    const again = await startWorker(token);
    expect(await again.bench().health('pico')).toMatchObject({ consecutiveFailures: 3, quarantine: { reason: QUARANTINE_REASON } });
    expect(await pico()).toMatchObject({ status: 'offline', offline_reason: QUARANTINE_REASON });
  });

  it('is released by an administrator through the store: it shows free at once (before the worker next reports) and the worker runs the next job', async () => {
    const worker = await startWorker(await labServer());
    const alice = await app.register('alice');
    worker.bench().brokenProbe.add('pico');
    await failJobs(alice.token, 3);
    worker.bench().brokenProbe.delete('pico');
    // Heartbeats until the worker itself reports pico unavailable as quarantined (its last word until the next one).
    await waitUntil(systemClock, async () => ((await workerReport()).quarantined ? true : undefined), {
      timeoutMs: 20_000,
      pollMs: 20,
      describe: 'the worker reporting pico quarantined',
      pause: async (ms) => {
        await app.fake.tickAsync(5_000);
        await new Promise((r) => setTimeout(r, ms));
      },
    });
    expect(await workerReport()).toMatchObject({ available: false, quarantined: true });
    const released = await adminPost('/admin/boards/pico/release');
    expect(released.status, await released.clone().text()).toBe(200);
    expect(await released.json()).toMatchObject({ board: 'pico', health: { consecutive_failures: 0, quarantined: false } });
    // No clock advance: the worker's last report still says quarantined; the store says released.
    expect(await pico()).toMatchObject({ status: 'free', offline_reason: null });
    const res = await flash(app, alice.token, { board: 'pico', uart_seconds: '0.2' }, picoElf);
    const { job_id: jobId } = (await res.json()) as { job_id: string };
    await app.jobReaches(jobId, 'done');
  });

  it('runs a health check on the worker that holds the board: failing keeps the quarantine, passing releases it, and it holds the board meanwhile', async () => {
    const worker = await startWorker(await labServer());
    const alice = await app.register('alice');
    worker.bench().brokenProbe.add('pico');
    await failJobs(alice.token, 3);

    const failed = await adminPost('/admin/boards/pico/health-check');
    expect(failed.status, await failed.clone().text()).toBe(200);
    expect(await failed.json()).toMatchObject({ board: 'pico', passed: false, reason: 'health check on pico failed: flash on pico failed (exit status 1)', status: 'offline' });
    expect(await adminHealth()).toMatchObject({ consecutive_failures: 4, quarantined: true });

    worker.bench().brokenProbe.delete('pico');
    const hold = deferred();
    worker.bench().holdHealthCheck = hold.promise;
    worker.bench().healthCheckStarted = deferred();
    const running = adminPost('/admin/boards/pico/health-check');
    await worker.bench().healthCheckStarted.promise;
    // The check holds the board on the server (the store says so): listed busy; a second check is refused.
    expect(await pico()).toMatchObject({ status: 'offline' });
    const second = await adminPost('/admin/boards/pico/health-check');
    expect(second.status).toBe(409);
    hold.resolve();
    const passed = await running;
    expect(passed.status).toBe(200);
    expect(await passed.json()).toMatchObject({ board: 'pico', passed: true, reason: null, uart_text: 'health ok on pico\r\n', elapsed_seconds: 0.25, health: { quarantined: false } });
    await picoBecomes('free');
  });

  it('holds a board that is in service for the length of its health check: sessions are refused with 409', async () => {
    const worker = await startWorker(await labServer());
    const alice = await app.register('alice');
    const hold = deferred();
    worker.bench().holdHealthCheck = hold.promise;
    const running = adminPost('/admin/boards/pico/health-check');
    await worker.bench().healthCheckStarted.promise;
    expect((await pico()).status).toBe('busy');
    const session = await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(alice.token), body: new URLSearchParams({ board: 'pico' }) });
    expect(session.status).toBe(409);
    expect(((await session.json()) as { detail: string }).detail).toMatch(/^board pico is running a health check started by an administrator at 2026-01-01T/);
    hold.resolve();
    expect(await (await running).json()).toMatchObject({ passed: true, status: 'free' });
  });

  it('answers 409 for a board whose worker keeps no health, and for a health check its backend cannot run', async () => {
    const token = await labServer();
    await startWorker(token, { keepsHealth: false });
    const release = await adminPost('/admin/boards/pico/release');
    expect(release.status).toBe(409);
    expect(((await release.json()) as { detail: string }).detail).toMatch(/^cannot release board pico: /);
    expect(await adminHealth()).toBeNull();
    await workers.splice(0)[0]!.close();
    await startWorker(token, { withHealthCheck: false });
    const check = await adminPost('/admin/boards/pico/health-check');
    expect(check.status).toBe(409);
    expect(await check.json()).toEqual({ detail: 'cannot health-check board pico: the probe backend has no health-check run' });
    expect(await adminHealth()).toMatchObject({ backend: 'probe', quarantined: false });
    // A worker that went silent is not asked (the request would only time out); its record still shows.
    await workers.splice(0)[0]!.close();
    await startWorker(token);
    await workers.splice(0)[0]!.close();
    await app.fake.tickAsync(20_000);
    const silent = await adminPost('/admin/boards/pico/health-check');
    expect(silent.status).toBe(409);
    expect(((await silent.json()) as { detail: string }).detail).toMatch(/^cannot health-check board pico: worker pi-probe \(wk_\S+\), which runs its health checks, is offline$/);
    expect(await adminHealth()).toMatchObject({ backend: 'probe', quarantined: false });
  });

  it('fails a health check its worker never reports at the deadline, and frees the board once the deadline and the grace ran out', async () => {
    const worker = await startWorker(await labServer());
    const hold = deferred();
    worker.bench().holdHealthCheck = hold.promise;
    const running = adminPost('/admin/boards/pico/health-check');
    await worker.bench().healthCheckStarted.promise;
    // The worker vanishes mid-check (as with kill -9): no outcome will come.
    await workers.splice(0)[0]!.close();
    await app.fake.tickAsync(60_000);
    expect(await (await running).json()).toMatchObject({ passed: false, reason: 'health check on pico did not finish within 60 s (the probe backend was aborted)' });
    // The request still holds the board in the store until its grace runs out (the worker might still report).
    expect((await app.server.service.store.healthChecks.active()).map((c) => c.board)).toEqual(['pico']);
    await app.fake.tickAsync(30_000);
    await waitUntil(systemClock, async () => ((await app.server.service.store.healthChecks.active()).length === 0 ? true : undefined), {
      timeoutMs: 10_000,
      describe: 'the lapsed health check swept',
    });
    expect(app.logger.lines.some((l) => /^warn: health check hc_\w+ on pico lapsed: its worker never reported it$/.test(l))).toBe(true);
  });
});
