import { afterEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { bearer, flash, picoElf, submit, withFault } from './bench-job-requests.js';

/**
 * Health and quarantine per instance (issue 27, decision 0551): one failing instance of a pool is
 * quarantined after consecutive infrastructure failures, claims and sessions skip it, the pool
 * serves on with the others, /api/v1/boards and /admin say so, and an administrator releases it.
 */

const ADMIN = 'admin-secret';
let app: BenchTestApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

interface PoolJson {
  total: number;
  free: number;
  offline: number;
  quarantined: number;
  list: Array<{ instance: string; status: string; quarantined: boolean; offline_reason: string | null; held_by: string | null; workers: Array<{ worker_id: string }> }>;
}

const openSession = (a: BenchTestApp, token: string, board: string) =>
  a.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams({ board }) });

async function picoPool(a: BenchTestApp): Promise<PoolJson> {
  const { boards } = (await (await a.request('/api/v1/boards')).json()) as { boards: Array<{ id: string; instances?: PoolJson }> };
  return boards.find((b) => b.id === 'pico')!.instances!;
}

/** A signed-in console cookie (the sign-in form's CSRF token, then the admin token). */
async function consoleCookie(a: BenchTestApp): Promise<string> {
  const form = await (await a.request('/console/sign-in')).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(form)![1]!;
  const res = await a.request('/console/sign-in', { method: 'POST', redirect: 'manual', body: new URLSearchParams({ token: ADMIN, csrf }) });
  expect(res.status).toBe(303);
  return res.headers.get('set-cookie')!.split(';')[0]!;
}

/** Three infrastructure failures (a flash the mock fails) on `instance`, one after another. */
async function failThrice(a: BenchTestApp, token: string, instance: string): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const job = await submit(a, token, { board: instance, uart_seconds: '0.1' }, withFault('flash-fail'));
    await a.jobReaches(job.job_id, 'failed');
  }
}

describe('an instance quarantined while its pool serves', () => {
  it('is skipped by sessions and jobs, shown quarantined, and back after an administrator releases it', async () => {
    const a = (app = await startBenchTestApp({ adminToken: ADMIN, localWorker: { poolSizes: { byBoard: { pico: 3 } } } }));
    const alice = await a.register('alice');
    // Alice holds pico.1 the whole time: the pool serves while one of its instances fails.
    const held = (await (await openSession(a, alice.token, 'pico.1@local')).json()) as { session_id: string; instance: string };
    expect(held.instance).toBe('pico.1@local');

    // Two failures do not quarantine; a job that ran would reset the count; the third does.
    await failThrice(a, alice.token, 'pico.2@local');
    expect((await a.server.service.store.boardHealth.get('pico.2@local')).quarantine?.reason).toMatch(/^quarantined after 3 consecutive infrastructure failures: flash-failed: /);
    // The board's own record (a pool of one's, the probe's) is untouched.
    expect((await a.server.service.store.boardHealth.get('pico')).quarantine).toBeUndefined();

    const pool = await picoPool(a);
    expect(pool).toMatchObject({ total: 3, free: 1, offline: 1, quarantined: 1 });
    const two = pool.list.find((i) => i.instance === 'pico.2@local')!;
    expect(two).toMatchObject({ status: 'offline', quarantined: true, held_by: null, workers: [{ worker_id: 'local' }] });
    expect(two.offline_reason).toMatch(/^quarantined after 3 consecutive/);
    expect(pool.list.find((i) => i.instance === 'pico.1@local')).toMatchObject({ status: 'leased', held_by: 'alice', quarantined: false });

    // Sessions and session-less jobs by the pool's name get the healthy one, never pico.2.
    const bob = await a.register('bob');
    const session = (await (await openSession(a, bob.token, 'pico')).json()) as { instance: string };
    expect(session.instance).toBe('pico.3@local');
    const carol = await a.register('carol');
    const refused = await openSession(a, carol.token, 'pico');
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { detail: string }).detail).not.toContain('pico.2@local');
    // Asked for by id: offline, with the reason and the way back, and nothing leased.
    const leasesBefore = await a.server.service.store.listLeases(a.fake.now);
    const asked = await openSession(a, carol.token, 'pico.2@local');
    expect(asked.status).toBe(503);
    expect(((await asked.json()) as { detail: string }).detail).toMatch(
      /^instance pico\.2@local of board pico is offline: quarantined after 3 consecutive infrastructure failures: .*; ask for "pico" \(any free instance\), or an administrator releases it \(POST \/admin\/boards\/pico\.2@local\/release\)$/,
    );
    const job = await flash(a, carol.token, { board: 'pico.2@local', uart_seconds: '0.1' }, picoElf());
    expect(job.status).toBe(503);
    expect(await a.server.service.store.listLeases(a.fake.now)).toEqual(leasesBefore);

    // /admin shows the pool's instances with their quarantine.
    const admin = (await (await a.request('/admin', { headers: { 'x-admin-token': ADMIN } })).json()) as { boards: Array<{ id: string; instances?: PoolJson }> };
    expect(admin.boards.find((b) => b.id === 'pico')!.instances).toMatchObject({ total: 3, quarantined: 1 });

    // The console lists the pool's instances with worker and holder, and offers to release pico.2 alone.
    const cookie = await consoleCookie(a);
    const index = await (await a.request('/console', { headers: { cookie } })).text();
    expect(index).toContain('<h3 id="pool-pico">pico: 3 instances</h3>');
    expect(index).toContain('0 free, 0 busy, 2 leased, 1 offline, 1 quarantined.');
    expect(index).toMatch(/<tr><td><code>pico\.1@local<\/code><\/td><td>leased<\/td><td>in this server \(local\)<\/td><td>alice<\/td><td><\/td><\/tr>/);
    expect(index).toMatch(/<tr><td><code>pico\.2@local<\/code><\/td><td>quarantined<\/td><td>in this server \(local\)<\/td><td><\/td><td>quarantined after 3 /);
    expect(index).toContain('<form method="post" action="/console/boards/pico.2@local/release">');

    // The administrator releases that one instance: the answer shows it free, and it serves again.
    const released = await a.request('/admin/boards/pico.2@local/release', { method: 'POST', headers: { 'x-admin-token': ADMIN } });
    expect(released.status).toBe(200);
    expect(await released.json()).toMatchObject({ board: 'pico.2@local', status: 'free', offline_reason: null, health: { quarantined: false, consecutive_failures: 0 } });
    const again = (await (await openSession(a, carol.token, 'pico')).json()) as { instance: string };
    expect(again.instance).toBe('pico.2@local');
  });

  it('answers board_offline when every instance of the pool is quarantined, leasing nothing', async () => {
    const a = (app = await startBenchTestApp({ adminToken: ADMIN, localWorker: { poolSizes: { byBoard: { pico: 2 } } } }));
    const alice = await a.register('alice');
    await failThrice(a, alice.token, 'pico.1@local');
    await failThrice(a, alice.token, 'pico.2@local');
    const res = await openSession(a, alice.token, 'pico');
    expect(res.status).toBe(503);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/^board pico is offline: every instance of its pool is quarantined: pico\.1@local \(quarantined after 3 /);
    expect(await a.server.service.store.listLeases(a.fake.now)).toEqual([]);
    const { boards } = (await (await a.request('/api/v1/boards')).json()) as { boards: Array<{ id: string; status: string; offline_reason: string | null }> };
    expect(boards.find((b) => b.id === 'pico')).toMatchObject({ status: 'offline', offline_reason: expect.stringMatching(/^every instance is offline: pico\.1@local: quarantined/) });
  });
});
