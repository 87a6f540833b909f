import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp, TEST_START_MS } from '../support/bench-test-app.js';
import type { BenchServiceConfig } from '../../server/bench/bench-service.js';
import { escapeHtml } from '../../server/bench/pages/html.js';
import { makeElf } from '../support/make-elf.js';
import { type BenchClient, benchClient } from './every-board-bench-client.js';
import { deferred, FakeBenchBackend } from './board-health-fake-backend.js';

/**
 * Live availability (issues 4 and 10): the worker in the server's process asks a board's backend
 * at every heartbeat (5 s of the injected clock) and reports it into the store, where the server
 * reads it (decision 0460), so a board that goes offline after the start (unplugged, a check that
 * starts throwing) is listed offline with the reason, refused with 503, and its queued jobs fail
 * with the reason; and back when it returns. Real HTTP on 127.0.0.1:0, the harness's fake clock,
 * `FakeBenchBackend` (mock runs, simulated time).
 */

const UNPLUGGED = 'serial device /dev/ttyFAKE-pico is missing: is pico plugged in?';
const picoElf = makeElf({ segments: [{ paddr: 0x1000_0000, data: new Uint8Array(64).fill(3) }] });

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(config: Partial<BenchServiceConfig> = {}): Promise<{ app: BenchTestApp; api: BenchClient; bench: FakeBenchBackend }> {
  let bench: FakeBenchBackend | undefined;
  const app = await startBenchTestApp({
    fake: createClock(TEST_START_MS),
    adminToken: 'admin',
    backend: 'probe',
    backends: ({ clock, quarantineStore }) => {
      bench = new FakeBenchBackend({ clock, store: quarantineStore, attached: ['pico'], quarantineAfterFailures: 3, withHealthCheck: true });
      return { probe: bench };
    },
    ...config,
  });
  cleanups.push(() => app.close());
  return { app, api: benchClient(app.url), bench: bench! };
}

const picoOf = async (api: BenchClient) => (await api.boards()).find((b) => b.id === 'pico')!;

describe('availability re-checked on the injected clock', () => {
  it('shows an unplugged board offline at the worker’s next heartbeat, and back online when plugged in again', async () => {
    const { app, api, bench } = await start({ availabilityCacheMs: 5_000 });
    expect(await picoOf(api)).toMatchObject({ status: 'free', offline_reason: null });
    const callsAtStart = bench.availabilityCalls.get('pico');
    expect(callsAtStart).toBe(1);
    // Listings, stats, the page and health within the window reuse the answer.
    for (let i = 0; i < 5; i++) {
      await api.boards();
      await api.page('/');
      await api.health();
    }
    expect(bench.availabilityCalls.get('pico')).toBe(callsAtStart);

    bench.unplugged.add('pico');
    await app.fake.tickAsync(4_999);
    expect(await picoOf(api)).toMatchObject({ status: 'free' });
    await app.fake.tickAsync(1);
    expect(await picoOf(api)).toMatchObject({ status: 'offline', backend: 'probe', offline_reason: UNPLUGGED });
    expect(await api.page('/')).toContain(escapeHtml(UNPLUGGED));
    expect(await api.health()).toMatchObject({ status: 'degraded', boards: { online: 0 } });
    const token = await api.register('unplugged');
    expect(await api.openSessionRefused(token, 'pico')).toMatchObject({ status: 503, detail: `board pico is offline: ${UNPLUGGED}` });
    expect(await api.flashRefused(token, { board: 'pico', uartSeconds: 0.5 }, picoElf)).toMatchObject({ status: 503, detail: `board pico is offline: ${UNPLUGGED}` });
    expect(app.logger.lines).toContain(`warn: board pico is offline: ${UNPLUGGED}`);

    bench.unplugged.delete('pico');
    await app.fake.tickAsync(5_000);
    expect(await picoOf(api)).toMatchObject({ status: 'free', offline_reason: null });
    expect(app.logger.lines).toContain('info: board pico is back online on probe');
    const session = await api.openSession(token, 'pico');
    await api.endSession(token, session);
    // Each status change was logged once, however many requests saw it.
    expect(app.logger.lines.filter((l) => l === `warn: board pico is offline: ${UNPLUGGED}`)).toHaveLength(1);
  });

  it('never crashes on an availability check that starts throwing: the board is offline with the error', async () => {
    const { app, api, bench } = await start();
    bench.availabilityThrows.add('pico');
    await app.fake.tickAsync(5_000);
    const reason = 'the probe backend failed its availability check: udevadm info printed garbage for pico';
    expect(await picoOf(api)).toMatchObject({ status: 'offline', offline_reason: reason });
    expect(await api.health()).toMatchObject({ database: 'ok', boards: { online: 0 } });
    expect((await app.request('/admin', { headers: { 'x-admin-token': 'admin' } })).status).toBe(200);
    expect(await api.page('/')).toContain(escapeHtml(reason));
    const token = await api.register('throwing');
    expect(await api.openSessionRefused(token, 'pico')).toMatchObject({ status: 503, detail: `board pico is offline: ${reason}` });
    expect(app.logger.lines.filter((l) => l.startsWith('error:'))).toEqual([]);
  });
});

describe('jobs queued on a board that goes offline', () => {
  it('fail with the reason when they reach the front of the queue; the job already running finishes', async () => {
    const { app, api, bench } = await start();
    const token = await api.register('queued');
    const session = await api.openSession(token, 'pico');
    const opening = deferred();
    bench.holdOpen.set('pico', opening.promise);
    const running = await api.flash(token, { board: 'pico', uartSeconds: 0.5, session }, picoElf);
    const waiting = await api.flash(token, { board: 'pico', uartSeconds: 0.5, session }, picoElf);
    expect(await picoOf(api)).toMatchObject({ status: 'busy', queued_jobs: 1 });

    bench.unplugged.add('pico');
    await app.fake.tickAsync(5_000);
    bench.holdOpen.delete('pico');
    opening.resolve();
    await app.idle();

    expect(await api.job(token, running.job_id)).toMatchObject({ state: 'done', failure: null });
    expect(await api.job(token, waiting.job_id)).toMatchObject({
      state: 'failed',
      uart: null,
      failure: { kind: 'unavailable', message: `board pico is offline: ${UNPLUGGED}` },
    });
    // The session outlives the outage; the board shows why it cannot be used.
    expect(await picoOf(api)).toMatchObject({ status: 'offline', offline_reason: UNPLUGGED, queued_jobs: 0 });
    await api.endSession(token, session);
  });
});

/**
 * One execution path (issue 10, decision 0460): the server never asks a backend itself. The worker
 * in its process reports its boards into the store at start and every heartbeat, as a remote worker
 * does, and listings follow those reports; the worker has a record like any, without a token.
 */
const HEARTBEAT_SECONDS = 30;
// Heartbeats far apart, so what the listings show can only come from them.
const HEARTBEATS_APART: Partial<BenchServiceConfig> = { workerTimings: { heartbeatSeconds: HEARTBEAT_SECONDS, offlineAfterSeconds: 3 * HEARTBEAT_SECONDS } };

describe('the embedded server reads availability from its worker’s reports', () => {
  it('asks no backend for a listing: a board unplugged shows offline at the worker’s next heartbeat, not when the board cache runs out', async () => {
    const { app, api, bench } = await start(HEARTBEATS_APART);
    expect(await picoOf(api)).toMatchObject({ status: 'free', offline_reason: null });
    expect(bench.availabilityCalls.get('pico')).toBe(1);

    bench.unplugged.add('pico');
    // Well past the 5 s board cache: listings, stats, health and the page read the store again,
    // and no backend is asked.
    await app.fake.tickAsync(HEARTBEAT_SECONDS * 1000 - 1);
    expect(await picoOf(api)).toMatchObject({ status: 'free' });
    await api.page('/');
    await api.health();
    expect(bench.availabilityCalls.get('pico')).toBe(1);

    await app.fake.tickAsync(1);
    expect(await picoOf(api)).toMatchObject({ status: 'offline', offline_reason: UNPLUGGED });
    expect(bench.availabilityCalls.get('pico')).toBe(2);
    // What the worker reported is in the store, where any replica reads it.
    const local = await app.server.service.store.workers.get('local');
    expect(local?.boards.find((b) => b.board === 'pico')).toMatchObject({ available: false, reason: UNPLUGGED });
  });

  it('lists its worker among the workers, online, and refuses to revoke it', async () => {
    const { app } = await start(HEARTBEATS_APART);
    const listed = (await (await app.request('/admin/workers', { headers: { 'x-admin-token': 'admin' } })).json()) as { workers: unknown[] };
    expect(listed.workers).toMatchObject([{ worker_id: 'local', label: 'in this server', online: true, revoked_at: null }]);
    const refused = await app.request('/admin/workers/local/revoke', { method: 'POST', headers: { 'x-admin-token': 'admin' } });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toEqual({
      detail: 'worker local runs inside a bench service and has no token to revoke: stop that service (or start it with --no-local-worker) instead',
    });
    // No token authenticates as it.
    const asWorker = await app.request('/api/v1/worker/heartbeat', { method: 'POST', headers: { authorization: 'Bearer hbw_in-process', 'content-type': 'application/json' }, body: '{}' });
    expect(asWorker.status).toBe(401);
  });
});

describe('a quarantined board that is also unplugged', () => {
  it('stays offline with the reason after a release, instead of showing available', async () => {
    const { app, api, bench } = await start(HEARTBEATS_APART);
    const token = await api.register('breaker');
    bench.brokenProbe.add('pico');
    for (let i = 0; i < 3; i++) {
      await api.flash(token, { board: 'pico', uartSeconds: 0.5 }, picoElf);
      await app.idle();
    }
    expect(await picoOf(api)).toMatchObject({ status: 'offline', offline_reason: expect.stringMatching(/^quarantined after 3 consecutive/) });
    bench.brokenProbe.delete('pico');
    bench.unplugged.add('pico');
    // The worker's next heartbeat says the board is unplugged besides its quarantine.
    await app.fake.tickAsync(HEARTBEAT_SECONDS * 1000);
    const released = await app.request('/admin/boards/pico/release', { method: 'POST', headers: { 'x-admin-token': 'admin' } });
    expect(await released.json()).toMatchObject({ board: 'pico', status: 'offline', offline_reason: UNPLUGGED, health: { quarantined: false } });
    expect(await picoOf(api)).toMatchObject({ status: 'offline', offline_reason: UNPLUGGED });

    bench.unplugged.delete('pico');
    await app.fake.tickAsync(HEARTBEAT_SECONDS * 1000);
    expect(await picoOf(api)).toMatchObject({ status: 'free', offline_reason: null });
  });
});
