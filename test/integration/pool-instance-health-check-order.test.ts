import { afterEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { bearer } from './bench-job-requests.js';

/**
 * An instance under an administrator's health check (decision 0606) is listed busy and handed out
 * last: the pool's other instances serve first, and a session that still takes it gets it rather
 * than a refusal. The check is requested of a worker nobody runs, so it stays active for the whole
 * test: what is seen is the check's effect alone, never a race with a worker running it.
 */

let app: BenchTestApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

interface PoolJson {
  busy: number;
  free: number;
  list: Array<{ instance: string; status: string }>;
}

const openSession = (a: BenchTestApp, token: string, board: string) =>
  a.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams({ board }) });

async function picoPool(a: BenchTestApp): Promise<PoolJson> {
  const { boards } = (await (await a.request('/api/v1/boards')).json()) as { boards: Array<{ id: string; instances?: PoolJson }> };
  return boards.find((b) => b.id === 'pico')!.instances!;
}

describe('an instance under a health check', () => {
  it('is listed busy and handed out after every other free instance of its pool', async () => {
    const a = (app = await startBenchTestApp({ localWorker: { poolSizes: { byBoard: { pico: 2 } } } }));
    const store = a.server.service.store;
    // The first instance in the pool's order is the one checked: without the check's ordering it is the one handed out first.
    const requested = await store.healthChecks.request({ checkId: 'check-1', board: 'pico.1@local', workerId: 'a-worker-nobody-runs', timeoutMs: 600_000, nowMs: Date.now() });
    expect(requested.kind).toBe('requested');

    const pool = await picoPool(a);
    expect(pool.list.find((i) => i.instance === 'pico.1@local')?.status, 'an instance under a health check is busy').toBe('busy');
    expect(pool.list.find((i) => i.instance === 'pico.2@local')?.status).toBe('free');
    expect(pool).toMatchObject({ busy: 1, free: 1 });

    const alice = await a.register('alice');
    const first = await openSession(a, alice.token, 'pico');
    expect(first.status).toBe(200);
    expect(((await first.json()) as { instance: string }).instance, 'the instance under a check was handed out before a free one').toBe('pico.2@local');

    // Nothing else free: the checked instance is still handed out (its jobs wait for the check), not refused.
    const bob = await a.register('bob');
    const second = await openSession(a, bob.token, 'pico');
    expect(second.status).toBe(200);
    expect(((await second.json()) as { instance: string }).instance).toBe('pico.1@local');
  });
});
