import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import type { BenchServiceConfig } from '../../server/bench/bench-service.js';
import { type BenchTestApp, startBenchTestApp, TEST_START_MS } from '../support/bench-test-app.js';
import { makeElf } from '../support/make-elf.js';
import { type BenchClient, benchClient } from './every-board-bench-client.js';
import { FakeBenchBackend } from './board-health-fake-backend.js';

/**
 * One execution path (issue 10, decision 0460): the embedded default's server never asks a backend
 * itself. The worker in its process reports its boards into the store at start and every
 * heartbeat, as a remote worker does, and listings follow those reports; the worker has a record
 * like any worker, without a token. Real HTTP on 127.0.0.1:0, the harness's fake clock.
 */

const ADMIN = 'admin';
const HEARTBEAT_SECONDS = 30;
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
    adminToken: ADMIN,
    backend: 'probe',
    // Heartbeats far apart, so what the listings show can only come from them.
    workerTimings: { heartbeatSeconds: HEARTBEAT_SECONDS, offlineAfterSeconds: 3 * HEARTBEAT_SECONDS },
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

describe('the embedded server reads availability from its worker’s reports', () => {
  it('asks no backend for a listing: a board unplugged shows offline at the worker’s next heartbeat, not when the board cache runs out', async () => {
    const { app, api, bench } = await start();
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
    const { app } = await start();
    const listed = (await (await app.request('/admin/workers', { headers: { 'x-admin-token': ADMIN } })).json()) as { workers: unknown[] };
    expect(listed.workers).toMatchObject([{ worker_id: 'local', label: 'in this server', online: true, revoked_at: null }]);
    const refused = await app.request('/admin/workers/local/revoke', { method: 'POST', headers: { 'x-admin-token': ADMIN } });
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
    const { app, api, bench } = await start();
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
    const released = await app.request('/admin/boards/pico/release', { method: 'POST', headers: { 'x-admin-token': ADMIN } });
    expect(await released.json()).toMatchObject({ board: 'pico', status: 'offline', offline_reason: UNPLUGGED, health: { quarantined: false } });
    expect(await picoOf(api)).toMatchObject({ status: 'offline', offline_reason: UNPLUGGED });

    bench.unplugged.delete('pico');
    await app.fake.tickAsync(HEARTBEAT_SECONDS * 1000);
    expect(await picoOf(api)).toMatchObject({ status: 'free', offline_reason: null });
  });
});
