import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp, TEST_START_MS } from '../support/bench-test-app.js';
import type { BenchServiceConfig } from '../../server/bench/bench-service.js';
import { escapeHtml } from '../../server/bench/pages/html.js';
import { makeElf } from '../support/make-elf.js';
import { type BenchClient, benchClient } from './every-board-bench-client.js';
import { deferred, FakeBenchBackend } from './board-health-fake-backend.js';

/**
 * Live availability (issue 4): the bench asks a board's backend again when it matters, at most
 * every `availabilityCacheMs` of the injected clock, so a board that goes offline after the
 * start (unplugged, a check that starts throwing) is listed offline with the reason, refused with
 * 503, and its queued jobs fail with the reason; and back when it returns. Real HTTP on
 * 127.0.0.1:0, the harness's fake clock, `FakeBenchBackend` (mock runs, simulated time).
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
  it('shows an unplugged board offline once the cache window has passed, and back online when plugged in again', async () => {
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
