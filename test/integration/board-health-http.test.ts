import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp, TEST_START_MS } from '../support/bench-test-app.js';
import { adminSchema, boardHealthCheckSchema, boardReleaseSchema } from '../../wire/bench/bench-schemas.js';
import type { BenchServiceConfig } from '../../server/bench/bench-service.js';
import { escapeHtml } from '../../server/bench/pages/html.js';
import { makeElf } from '../support/make-elf.js';
import { type BenchClient, benchClient } from './every-board-bench-client.js';
import { deferred, FakeBenchBackend } from './board-health-fake-backend.js';

/**
 * Issue 4 over real HTTP (127.0.0.1:0, the harness's fake clock): after consecutive
 * infrastructure failures a board is quarantined, shown offline with the reason on
 * `/api/v1/boards`, `/` and `/admin`; an administrator releases it or a health check does; the
 * quarantine survives a restart. The bench is `FakeBenchBackend`: board health kept exactly as
 * the probe backend keeps it, in the server's `SqlBoardHealthStore`, firmware run on the mock.
 */

const ADMIN_TOKEN = 'admin-s3cret';
const QUARANTINE_REASON = 'quarantined after 3 consecutive infrastructure failures: flash on pico failed (exit status 1); last error: ** Programming Failed **';
/** A pico image (flash at 0x1000_0000) the mock runs. */
const picoElf = makeElf({ segments: [{ paddr: 0x1000_0000, data: new Uint8Array(64).fill(7) }] });

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Started {
  app: BenchTestApp;
  api: BenchClient;
  /** The fake bench of the app currently running (a restart builds a new one on the same database). */
  bench: () => FakeBenchBackend;
  admin: () => Promise<ReturnType<typeof adminSchema.parse>>;
  post: (path: string, token?: string | null) => Promise<Response>;
  restart: () => Promise<void>;
}

async function start(options: { withHealthCheck?: boolean; config?: Partial<BenchServiceConfig> } = {}): Promise<Started> {
  let current: FakeBenchBackend | undefined;
  const config: Partial<BenchServiceConfig> = {
    adminToken: ADMIN_TOKEN,
    backend: 'probe',
    backends: ({ clock, quarantineStore }) => {
      current = new FakeBenchBackend({
        clock,
        store: quarantineStore,
        attached: ['pico'],
        quarantineAfterFailures: 3,
        withHealthCheck: options.withHealthCheck ?? true,
      });
      return { probe: current };
    },
    ...options.config,
  };
  const fake = createClock(TEST_START_MS);
  const started: Started = {
    app: await startBenchTestApp({ ...config, fake }),
    api: undefined as unknown as BenchClient,
    bench: () => current!,
    admin: async () => {
      const res = await started.app.request('/admin', { headers: { 'x-admin-token': ADMIN_TOKEN } });
      expect(res.status).toBe(200);
      return adminSchema.parse(await res.json());
    },
    post: (path, token = ADMIN_TOKEN) => started.app.request(path, { method: 'POST', headers: token === null ? {} : { 'x-admin-token': token } }),
    restart: async () => {
      started.app = await started.app.restart();
      started.api = benchClient(started.app.url);
    },
  };
  started.api = benchClient(started.app.url);
  cleanups.push(() => started.app.close());
  return started;
}

/** Runs `count` jobs on pico with its probe broken; each fails as an infrastructure failure. */
async function failJobs(s: Started, token: string, count: number): Promise<void> {
  s.bench().brokenProbe.add('pico');
  for (let i = 0; i < count; i++) {
    const queued = await s.api.flash(token, { board: 'pico', uartSeconds: 0.5 }, picoElf);
    await s.app.idle();
    expect(await s.api.job(token, queued.job_id)).toMatchObject({ state: 'failed', failure: { kind: 'flash-failed' } });
  }
}

const picoOf = async (api: BenchClient) => (await api.boards()).find((b) => b.id === 'pico')!;

describe('quarantine after consecutive infrastructure failures', () => {
  it('takes the board offline with the reason on /api/v1/boards, /, /admin and stats, and refuses sessions and jobs with 503', async () => {
    const s = await start();
    const token = await s.api.register('quarantine');
    await failJobs(s, token, 2);
    // Two failures: still in service, the count is visible to the operator.
    expect(await picoOf(s.api)).toMatchObject({ status: 'free', offline_reason: null });
    expect((await s.admin()).boards.find((b) => b.id === 'pico')!.health).toEqual({
      backend: 'probe',
      consecutive_failures: 2,
      last_failure: 'flash on pico failed (exit status 1); last error: ** Programming Failed **',
      quarantined: false,
      quarantined_since: null,
      quarantine_reason: null,
    });

    await failJobs(s, token, 1);
    // No clock advance: a backend that keeps board health is asked again right after a job.
    expect(await picoOf(s.api)).toMatchObject({ status: 'offline', backend: 'probe', offline_reason: QUARANTINE_REASON });
    expect(await s.api.page('/')).toContain(escapeHtml(QUARANTINE_REASON));
    const stats = (await (await s.app.request('/api/v1/stats')).json()) as { boards: Array<{ id: string; offline_reason: string | null }> };
    expect(stats.boards.find((b) => b.id === 'pico')!.offline_reason).toBe(QUARANTINE_REASON);
    const admin = (await s.admin()).boards.find((b) => b.id === 'pico')!;
    expect(admin).toMatchObject({ status: 'offline', offline_reason: QUARANTINE_REASON, lease: null, queued_jobs: 0 });
    expect(admin.health).toEqual({
      backend: 'probe',
      consecutive_failures: 3,
      last_failure: 'flash on pico failed (exit status 1); last error: ** Programming Failed **',
      quarantined: true,
      quarantined_since: new Date(TEST_START_MS).toISOString(),
      quarantine_reason: QUARANTINE_REASON,
    });
    // A board the fake bench does not have: offline for its own reason, and no health kept for a
    // board only because it exists (the backend still answers for it).
    expect((await s.api.boards()).find((b) => b.id === 'microbit')).toMatchObject({ status: 'offline', offline_reason: 'board microbit is not attached to this fake bench' });

    expect(await s.api.openSessionRefused(token, 'pico')).toMatchObject({ status: 503, detail: `board pico is offline: ${QUARANTINE_REASON}` });
    expect(await s.api.flashRefused(token, { board: 'pico', uartSeconds: 0.5 }, picoElf)).toMatchObject({
      status: 503,
      detail: `board pico is offline: ${QUARANTINE_REASON}`,
    });
    expect(s.app.logger.lines).toContain(`warn: board pico is offline: ${QUARANTINE_REASON}`);
  });

  it('is released by an administrator: free again, the next job runs, and releasing again is harmless', async () => {
    const s = await start();
    const token = await s.api.register('release');
    await failJobs(s, token, 3);
    s.bench().brokenProbe.delete('pico');

    const res = await s.post('/admin/boards/pico/release');
    expect(res.status).toBe(200);
    const raw: unknown = await res.json();
    // Exactly the documented shape: parsing strips nothing.
    expect(boardReleaseSchema.parse(raw)).toEqual(raw);
    expect(raw).toEqual({
      board: 'pico',
      status: 'free',
      offline_reason: null,
      health: { backend: 'probe', consecutive_failures: 0, last_failure: null, quarantined: false, quarantined_since: null, quarantine_reason: null },
    });
    expect(await picoOf(s.api)).toMatchObject({ status: 'free', offline_reason: null });
    expect(s.app.logger.lines).toContain('info: board pico released by an administrator');
    expect(s.app.logger.lines).toContain('info: board pico is back online on probe');

    const queued = await s.api.flash(token, { board: 'pico', uartSeconds: 0.5 }, picoElf);
    await s.app.idle();
    expect(await s.api.job(token, queued.job_id)).toMatchObject({ state: 'done', failure: null, stop: { reason: 'elapsed' } });

    const again = await s.post('/admin/boards/pico/release');
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ board: 'pico', status: 'free' });
  });

  it('survives a restart: the quarantine is in bench.sqlite, not in the backend', async () => {
    const s = await start();
    const token = await s.api.register('restart');
    await failJobs(s, token, 3);
    await s.restart();
    // A new backend instance on the reopened database: only the store can remember.
    expect(s.bench().brokenProbe.size).toBe(0);
    expect(await picoOf(s.api)).toMatchObject({ status: 'offline', offline_reason: QUARANTINE_REASON });
    expect((await s.admin()).boards.find((b) => b.id === 'pico')!.health).toMatchObject({
      consecutive_failures: 3,
      quarantined: true,
      quarantined_since: new Date(TEST_START_MS).toISOString(),
    });
    expect(s.app.logger.lines).toContain(`warn: board pico is offline: ${QUARANTINE_REASON}`);

    expect((await s.post('/admin/boards/pico/release')).status).toBe(200);
    await s.restart();
    expect(await picoOf(s.api)).toMatchObject({ status: 'free', offline_reason: null });
  });
});

describe('POST /admin/boards/{board}/health-check', () => {
  it('a failing check leaves the board quarantined; a passing one releases it', async () => {
    const s = await start();
    const token = await s.api.register('health-check');
    await failJobs(s, token, 3);

    const failed = await s.post('/admin/boards/pico/health-check');
    expect(failed.status).toBe(200);
    expect(boardHealthCheckSchema.parse(await failed.json())).toMatchObject({
      board: 'pico',
      passed: false,
      reason: 'health check on pico failed: flash on pico failed (exit status 1)',
      elapsed_seconds: null,
      status: 'offline',
      offline_reason: QUARANTINE_REASON,
      // One more infrastructure failure counted; the original quarantine is kept.
      health: { consecutive_failures: 4, quarantined: true, quarantine_reason: QUARANTINE_REASON },
    });

    s.bench().brokenProbe.delete('pico');
    const passed = await s.post('/admin/boards/pico/health-check');
    expect(passed.status).toBe(200);
    const raw: unknown = await passed.json();
    expect(boardHealthCheckSchema.parse(raw)).toEqual(raw);
    expect(raw).toEqual({
      board: 'pico',
      passed: true,
      reason: null,
      uart_text: 'health ok on pico\r\n',
      elapsed_seconds: 0.25,
      status: 'free',
      offline_reason: null,
      health: { backend: 'probe', consecutive_failures: 0, last_failure: null, quarantined: false, quarantined_since: null, quarantine_reason: null },
    });
    expect(await picoOf(s.api)).toMatchObject({ status: 'free' });
    const session = await s.api.openSession(token, 'pico');
    await s.api.endSession(token, session);
  });

  it('holds the board while it runs: listed busy, sessions refused with 409, a second check refused', async () => {
    const s = await start();
    const token = await s.api.register('holder');
    const release = deferred();
    s.bench().holdHealthCheck = release.promise;
    const running = s.post('/admin/boards/pico/health-check');
    await s.bench().healthCheckStarted.promise;

    expect(await picoOf(s.api)).toMatchObject({ status: 'busy' });
    const refused = await s.api.openSessionRefused(token, 'pico');
    expect(refused.status).toBe(409);
    expect(refused.detail).toBe('board pico is running a health check started by an administrator at 2026-01-01T00:00:00.000Z (retry_after_seconds=5)');
    expect(refused.headers.get('retry-after')).toBe('5');
    const second = await s.post('/admin/boards/pico/health-check');
    expect(second.status).toBe(409);
    expect(await second.json()).toEqual({ detail: 'board pico is already running a health check started at 2026-01-01T00:00:00.000Z' });

    release.resolve();
    expect(await (await running).json()).toMatchObject({ passed: true, status: 'free' });
    expect(await picoOf(s.api)).toMatchObject({ status: 'free' });
    const session = await s.api.openSession(token, 'pico');

    // A leased board is somebody's: the check would flash it under their feet.
    const leased = await s.post('/admin/boards/pico/health-check');
    expect(leased.status).toBe(409);
    expect(await leased.json()).toEqual({
      detail: 'cannot health-check board pico: it is leased by agent "holder"; a health check needs the board to itself',
    });
    await s.api.endSession(token, session);
  });

  it('aborts a check that does not finish within the timeout, on the injected clock', async () => {
    const s = await start({ config: { healthCheckTimeoutMs: 30_000 } });
    s.bench().holdHealthCheck = new Promise<void>(() => undefined);
    const running = s.post('/admin/boards/pico/health-check');
    await s.bench().healthCheckStarted.promise;
    await s.app.fake.tickAsync(30_000);
    expect(boardHealthCheckSchema.parse(await (await running).json())).toMatchObject({
      passed: false,
      reason: 'health check on pico did not finish within 30 s (the probe backend was aborted)',
    });
    // The fake backend honours the abort, so the board is free for the next check.
    expect(await picoOf(s.api)).toMatchObject({ status: 'free' });
  });

  it('answers 409 when the backend has no health-check run', async () => {
    const s = await start({ withHealthCheck: false });
    const res = await s.post('/admin/boards/pico/health-check');
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ detail: 'cannot health-check board pico: the probe backend has no health-check run' });
  });
});

describe('admin endpoints: authentication and refusals', () => {
  it('403 when admin is disabled, 401 without or with a wrong token (before the board is even looked up)', async () => {
    const disabled = await start({ config: { adminToken: undefined } });
    for (const path of ['/admin/boards/pico/release', '/admin/boards/pico/health-check', '/admin/boards/nope/release']) {
      const res = await disabled.post(path, 'anything');
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ detail: 'admin is disabled: start the server with --admin-token or HILBENCH_ADMIN_TOKEN' });
    }
    const s = await start();
    for (const path of ['/admin/boards/pico/release', '/admin/boards/pico/health-check', '/admin/boards/nope/health-check']) {
      expect(await (await s.post(path, null)).json()).toEqual({ detail: 'admin token required: send it in the x-admin-token header' });
      const wrong = await s.post(path, `${ADMIN_TOKEN}!`);
      expect(wrong.status).toBe(401);
      expect(await wrong.json()).toEqual({ detail: 'wrong admin token' });
    }
    // Refused requests changed nothing.
    expect(await picoOf(s.api)).toMatchObject({ status: 'free' });
  });

  it('404 for an unknown board; 409 for a board whose backend keeps no board health; GET is 405', async () => {
    const s = await start();
    const unknown = await s.post('/admin/boards/nope/release');
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { detail: string }).detail).toMatch(/^board "nope" not found; boards here: .*pico/);
    const get = await s.app.request('/admin/boards/pico/release', { headers: { 'x-admin-token': ADMIN_TOKEN } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');

    const mock = await start({ config: { backend: 'mock', backends: { mock: undefined } } });
    for (const action of ['release', 'health-check']) {
      const res = await mock.post(`/admin/boards/pico/${action}`);
      expect(res.status).toBe(409);
      expect(await res.json()).toEqual({ detail: `cannot ${action} board pico: its backend (mock) keeps no board health and never quarantines it` });
    }
    expect((await mock.admin()).boards.every((b) => b.health === null)).toBe(true);
  });

  it('documents both endpoints in /openapi.json behind the admin token', async () => {
    const s = await start();
    const doc = (await (await s.app.request('/openapi.json')).json()) as {
      paths: Record<string, Record<string, { security?: unknown; responses: Record<string, unknown>; parameters?: Array<{ name: string; in: string }> }>>;
    };
    for (const path of ['/admin/boards/{board}/release', '/admin/boards/{board}/health-check']) {
      const op = doc.paths[path]!.post!;
      expect(op.security).toEqual([{ AdminToken: [] }]);
      expect(Object.keys(op.responses)).toEqual(['200', '401', '403', '404', '409', '500']);
      expect(op.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'board', in: 'path' }), expect.objectContaining({ name: 'x-admin-token', in: 'header' })]));
    }
  });
});

describe('--backend auto', () => {
  it('finds the backend keeping a board health among those listed, shows its quarantine in the reason, and releases it', async () => {
    let bench: FakeBenchBackend | undefined;
    const app = await startBenchTestApp({
      fake: createClock(TEST_START_MS),
      adminToken: ADMIN_TOKEN,
      backend: 'auto',
      // stm32f4-discovery lists renode first, then probe; renode is not configured here.
      backends: ({ clock, quarantineStore }) => {
        bench = new FakeBenchBackend({ clock, store: quarantineStore, attached: ['stm32f4-discovery'], quarantineAfterFailures: 3, withHealthCheck: true });
        return { probe: bench };
      },
    });
    cleanups.push(() => app.close());
    const api = benchClient(app.url);
    const f4 = async () => (await api.boards()).find((b) => b.id === 'stm32f4-discovery')!;
    expect(await f4()).toMatchObject({ status: 'free', backend: 'probe' });

    const token = await api.register('auto');
    const f4Elf = makeElf({ segments: [{ paddr: 0x0800_0000, data: new Uint8Array(64).fill(9) }] });
    bench!.brokenProbe.add('stm32f4-discovery');
    for (let i = 0; i < 3; i++) {
      await api.flash(token, { board: 'stm32f4-discovery', uartSeconds: 0.5 }, f4Elf);
      await app.idle();
    }
    // Named by the backend keeping its health, with the quarantine's reason (the store's record,
    // as for a board on a remote worker: one path, decision 0460).
    const reason = 'quarantined after 3 consecutive infrastructure failures: flash on stm32f4-discovery failed (exit status 1); last error: ** Programming Failed **';
    expect(await f4()).toMatchObject({ status: 'offline', backend: 'probe', offline_reason: reason });
    const admin = adminSchema.parse(await (await app.request('/admin', { headers: { 'x-admin-token': ADMIN_TOKEN } })).json());
    expect(admin.boards.find((b) => b.id === 'stm32f4-discovery')!.health).toMatchObject({ backend: 'probe', quarantined: true });
    // A board that lists no backend keeping health (microbit: qemu only) has none.
    expect(admin.boards.find((b) => b.id === 'microbit')!.health).toBeNull();
    const refused = await app.request('/admin/boards/microbit/release', { method: 'POST', headers: { 'x-admin-token': ADMIN_TOKEN } });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toEqual({ detail: 'cannot release board microbit: its backends (qemu) keep no board health and never quarantine it' });

    bench!.brokenProbe.delete('stm32f4-discovery');
    const released = await app.request('/admin/boards/stm32f4-discovery/release', { method: 'POST', headers: { 'x-admin-token': ADMIN_TOKEN } });
    expect(await released.json()).toMatchObject({ board: 'stm32f4-discovery', status: 'free', offline_reason: null, health: { backend: 'probe', quarantined: false } });
    expect(await f4()).toMatchObject({ status: 'free', backend: 'probe' });
  });
});
