import { afterEach, describe, expect, it, vi } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { makeElf } from '../support/make-elf.js';
import { createTestDatabase } from '../support/postgres-test-database.js';
import { flash } from './bench-job-requests.js';
import { deferred, FakeBenchBackend } from './board-health-fake-backend.js';

/**
 * Decision 0430, on both stores: the boards of the worker in the server's own process (the
 * embedded default) take the path a remote worker's take. A release writes the store's record
 * (the server calls no backend), and a health check is a request in the store that the worker
 * in this process claims, runs on its backend and reports, like any worker.
 */

const ADMIN = 'admin-secret';
const picoElf = makeElf({ segments: [{ paddr: 0x1000_0000, data: new Uint8Array(64).fill(7) }] });

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function embedded(store: 'sqlite' | 'postgres'): Promise<{ app: BenchTestApp; bench: () => FakeBenchBackend; restart: () => Promise<BenchTestApp> }> {
  const database = store === 'postgres' ? await createTestDatabase({ migrated: 'bench' }) : undefined;
  if (database) cleanups.push(database.drop);
  let bench: FakeBenchBackend | undefined;
  const app = await startBenchTestApp({
    adminToken: ADMIN,
    backend: 'probe',
    backends: ({ clock, quarantineStore }) => {
      bench = new FakeBenchBackend({ clock, store: quarantineStore, attached: ['pico'], quarantineAfterFailures: 3, withHealthCheck: true });
      return { probe: bench };
    },
    ...(database ? { databaseUrl: database.url } : {}),
  });
  let current = app;
  cleanups.push(() => current.close());
  return {
    app,
    bench: () => bench!,
    restart: async () => {
      current = await current.restart();
      return current;
    },
  };
}

const adminPost = (app: BenchTestApp, route: string) => app.request(route, { method: 'POST', headers: { 'x-admin-token': ADMIN } });

async function pico(app: BenchTestApp): Promise<{ status: string; offline_reason: string | null }> {
  const { boards } = (await (await app.request('/api/v1/boards')).json()) as { boards: Array<{ id: string; status: string; offline_reason: string | null }> };
  return boards.find((b) => b.id === 'pico')!;
}

async function quarantine(app: BenchTestApp, bench: FakeBenchBackend, token: string): Promise<void> {
  bench.brokenProbe.add('pico');
  for (let i = 0; i < 3; i++) {
    const res = await flash(app, token, { board: 'pico', uart_seconds: '0.2' }, picoElf);
    expect(res.status, await res.clone().text()).toBe(200);
    await app.jobReaches(((await res.json()) as { job_id: string }).job_id, 'failed');
  }
  bench.brokenProbe.delete('pico');
  expect(await pico(app)).toMatchObject({ status: 'offline', offline_reason: expect.stringMatching(/^quarantined after 3 consecutive/) });
}

describe.each(['sqlite', 'postgres'] as const)('board health of the server’s own boards goes through the store (%s store)', (store) => {
  it('releases a board by writing the store’s record, without calling its backend', async () => {
    const { app, bench } = await embedded(store);
    const alice = await app.register('alice');
    await quarantine(app, bench(), alice.token);
    const release = vi.spyOn(bench(), 'release');
    const released = await adminPost(app, '/admin/boards/pico/release');
    expect(released.status, await released.clone().text()).toBe(200);
    expect(await released.json()).toMatchObject({ status: 'free', health: { quarantined: false, consecutive_failures: 0 } });
    expect(release).not.toHaveBeenCalled();
    expect(await app.server.service.store.boardHealth.get('pico')).toEqual({ consecutiveFailures: 0, lastFailure: undefined, quarantine: undefined });
    expect(await pico(app)).toMatchObject({ status: 'free', offline_reason: null });
  });

  it('runs a health check as a stored request the worker in this process claims, runs and reports', async () => {
    const { app, bench } = await embedded(store);
    const alice = await app.register('alice');
    await quarantine(app, bench(), alice.token);
    const hold = deferred();
    bench().holdHealthCheck = hold.promise;
    const checking = adminPost(app, '/admin/boards/pico/health-check');
    await bench().healthCheckStarted.promise;
    // The request is the store's, taken by this server's own worker (`local` alone on SQLite, one id per replica on PostgreSQL).
    const [active, ...others] = await app.server.service.store.healthChecks.active();
    expect(others).toEqual([]);
    expect(active).toMatchObject({ board: 'pico', state: 'running', workerId: expect.stringMatching(/^local/) });
    hold.resolve();
    const answer = await checking;
    expect(answer.status, await answer.clone().text()).toBe(200);
    expect(await answer.json()).toMatchObject({ board: 'pico', passed: true, status: 'free', health: { quarantined: false } });
    expect(await app.server.service.store.healthChecks.get(active!.checkId)).toMatchObject({
      state: 'done',
      outcome: { passed: true, uartText: 'health ok on pico\r\n' },
    });
    expect(await app.server.service.store.healthChecks.active()).toEqual([]);
  });

  it('ends a health check the server’s own worker was running when the server stopped, freeing the board at the next start', async () => {
    const { app, bench, restart } = await embedded(store);
    bench().holdHealthCheck = new Promise<void>(() => undefined);
    const checking = adminPost(app, '/admin/boards/pico/health-check').catch((err: unknown) => err);
    await bench().healthCheckStarted.promise;
    const [running] = await app.server.service.store.healthChecks.active();
    expect(running).toMatchObject({ board: 'pico', state: 'running' });
    const restarted = await restart();
    await checking;
    // Not held until the lapse sweep (deadline and 30 s more): nothing would ever report it.
    expect(await restarted.server.service.store.healthChecks.active()).toEqual([]);
    expect(await restarted.server.service.store.healthChecks.get(running!.checkId)).toMatchObject({
      state: 'done',
      outcome: { passed: false, reason: 'the bench service restarted while this health check ran' },
    });
    expect(restarted.logger.lines).toContain(`warn: health check ${running!.checkId} on pico was interrupted by a restart`);
    expect(await pico(restarted)).toMatchObject({ status: 'free' });
    const again = await adminPost(restarted, '/admin/boards/pico/health-check');
    expect(again.status, await again.clone().text()).toBe(200);
    expect(await again.json()).toMatchObject({ passed: true, status: 'free' });
  });
});
