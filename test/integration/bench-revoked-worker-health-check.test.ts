import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { createTestDatabase } from '../support/postgres-test-database.js';
import { bearer } from './bench-job-requests.js';

/**
 * A health check requested of a worker that an administrator then revokes: the revoked worker can
 * neither claim nor report it, so it ends at once (failed, naming the revocation) and the board is
 * free for the next worker serving it, not held until the check's deadline (~150 s).
 */

const ADMIN = 'admin-secret';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const PICO = { board: 'pico', backend: 'probe', available: true, keeps_health: true, health_check: true };
const asAdmin = { 'x-admin-token': ADMIN };

describe.each(['sqlite', 'postgres'] as const)('revoking a worker asked for a health check (%s store)', (store) => {
  it('fails the check at once, naming the revocation, and frees the board for another worker serving it', async () => {
    const database = store === 'postgres' ? await createTestDatabase({ migrated: 'bench' }) : undefined;
    if (database) cleanups.push(database.drop);
    const app: BenchTestApp = await startBenchTestApp({ localWorker: false, adminToken: ADMIN, ...(database ? { databaseUrl: database.url } : {}) });
    cleanups.push(() => app.close());
    for (const label of ['pi-1', 'pi-2']) {
      const created = await app.request('/admin/workers', { method: 'POST', headers: asAdmin, body: new URLSearchParams({ label }) });
      const { token } = (await created.json()) as { token: string };
      const announced = await app.request('/api/v1/worker/announce', { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: JSON.stringify({ boards: [PICO] }) });
      expect(announced.status).toBe(200);
    }
    app.fake.tick(5_000); // past the availability cache

    // The administrator's request waits for the worker's outcome; the check holds the board meanwhile.
    const checking = app
      .request('/admin/boards/pico/health-check', { method: 'POST', headers: asAdmin, signal: AbortSignal.timeout(15_000) })
      .catch((err: unknown) => {
        throw new Error(`the health check went on waiting after its worker was revoked (it held the board until its deadline): ${String(err)}`);
      });
    const stored = app.server.service.store;
    const [check] = await waitUntil(systemClock, async () => {
      const active = await stored.healthChecks.active();
      return active.length > 0 ? active : undefined;
    }, { timeoutMs: 20_000, pollMs: 5, describe: 'the health check to be requested' });
    const { token: agent } = await app.register('alice');
    const openSession = () => app.request('/api/v1/sessions', { method: 'POST', headers: bearer(agent), body: new URLSearchParams({ board: 'pico', idle_seconds: '60' }) });
    expect((await openSession()).status).toBe(409);

    expect((await app.request(`/admin/workers/${check!.workerId}/revoke`, { method: 'POST', headers: asAdmin })).status).toBe(200);
    const answer = await checking;
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as { passed: boolean; reason: string };
    expect([body.passed, body.reason]).toEqual([false, expect.stringMatching(new RegExp(`worker ${check!.workerId} \\(pi-\\d\\) was revoked by an administrator`))]);
    expect(await stored.healthChecks.get(check!.checkId)).toMatchObject({ state: 'done', outcome: { passed: false } });
    // No clock moved: the other worker's pico takes a session now, not 150 s later.
    const opened = await openSession();
    expect(opened.status, await opened.clone().text()).toBe(200);
  });
});
