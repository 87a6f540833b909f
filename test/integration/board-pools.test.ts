import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers, systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { createWorkerToken, type LabWorker, startLabWorker } from '../support/lab-worker.js';
import { bearer, flash, getJob, picoElf, submit, withFault } from './bench-job-requests.js';

/**
 * Board pools over real HTTP (issue 27, decision 0510): `pico` names a pool whose instances run on
 * the worker in the server's process and on a remote worker; sessions and jobs take any free
 * instance and say which, a client may ask for one, and refusals change nothing.
 */

const ADMIN = 'admin-secret';
let app: BenchTestApp | undefined;
const workers: LabWorker[] = [];
afterEach(async () => {
  for (const w of workers.splice(0)) await w.close();
  await app?.close();
  app = undefined;
});

const openSession = (a: BenchTestApp, token: string, fields: Record<string, string>) =>
  a.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams(fields) });

/** An app whose own worker runs `localSize` instances of every board, or of `pico` only (no remote worker yet). */
async function poolApp(localSize: number, options: { picoOnly?: boolean } = {}): Promise<BenchTestApp> {
  const poolSizes = options.picoOnly ? { byBoard: { pico: localSize } } : { all: localSize };
  app = await startBenchTestApp({ adminToken: ADMIN, localWorker: { poolSizes }, workerTimings: { claimSeconds: 30 } });
  return app;
}

async function remoteWorker(a: BenchTestApp, size: number, label = 'pi-pool'): Promise<string> {
  const { token, worker_id } = await createWorkerToken(a.request, { adminToken: ADMIN, label });
  workers.push(await startLabWorker({ serverUrl: a.url, token, clock: clockFromFakeTimers(a.fake), boards: ['pico'], poolSizes: { all: size } }));
  return worker_id;
}

describe('board pools', () => {
  it('spans two workers: every instance goes to one session, the next is refused naming an instance, and jobs run on their session’s instance', async () => {
    const a = await poolApp(2);
    const remoteId = await remoteWorker(a, 2);
    const expected = ['pico.1@local', 'pico.2@local', `pico.1@${remoteId}`, `pico.2@${remoteId}`];
    const sessions: Array<{ token: string; session_id: string; instance: string }> = [];
    for (let i = 0; i < 4; i++) {
      const { token } = await a.register(`agent-${i}`);
      const res = await openSession(a, token, { board: 'pico' });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { session_id: string; board: string; instance: string };
      expect(body.board).toBe('pico');
      sessions.push({ token, session_id: body.session_id, instance: body.instance });
    }
    expect(sessions.map((s) => s.instance).sort()).toEqual([...expected].sort());
    const late = await a.register('late');
    const refused = await openSession(a, late.token, { board: 'pico' });
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { detail: string }).detail).toMatch(/^instance pico\.\d@\S+ of board pico is leased by agent "agent-\d"/);

    const jobs = await Promise.all(sessions.map((s) => submit(a, s.token, { board: 'pico', session: s.session_id, uart_seconds: '0.1' }, picoElf())));
    for (const [i, job] of jobs.entries()) {
      expect(job.instance).toBe(sessions[i]!.instance);
      await a.jobReaches(job.job_id, 'done', 'failed');
      expect((await getJob(a, sessions[i]!.token, job.job_id)).failure).toBeNull();
      const stored = await a.server.service.store.getJob(job.job_id);
      // Run by the worker whose instance it is.
      expect(stored!.workerId).toBe(sessions[i]!.instance.endsWith('@local') ? 'local' : remoteId);
    }
  });

  it('gives a session-less job a free instance it leases for its duration, and names it', async () => {
    const a = await poolApp(2);
    const alice = await a.register('alice');
    const first = await submit(a, alice.token, { board: 'pico', uart_seconds: '0.1' }, withFault('run-hang'));
    const second = await submit(a, alice.token, { board: 'pico', uart_seconds: '0.1' }, withFault('run-hang'));
    expect([first.instance, second.instance].sort()).toEqual(['pico.1@local', 'pico.2@local']);
    await a.jobReaches(first.job_id, 'running');
    await a.jobReaches(second.job_id, 'running');
    // Both instances busy at once: a third is refused, nothing is queued.
    const third = await flash(a, alice.token, { board: 'pico', uart_seconds: '0.1' }, picoElf());
    expect(third.status).toBe(409);
    expect((await a.server.service.store.counts()).jobsByState.queued).toBe(0);
  });

  it('opens a session on an instance asked for by id, refuses it held by someone else, and refuses one that does not exist, changing nothing', async () => {
    const a = await poolApp(2);
    const alice = await a.register('alice');
    const bob = await a.register('bob');
    const asked = await openSession(a, alice.token, { board: 'pico.2@local' });
    expect(asked.status).toBe(200);
    const session = (await asked.json()) as { session_id: string; board: string; instance: string };
    expect(session).toMatchObject({ board: 'pico', instance: 'pico.2@local' });

    const held = await openSession(a, bob.token, { board: 'pico.2@local' });
    expect(held.status).toBe(409);
    expect(((await held.json()) as { detail: string }).detail).toMatch(/^instance pico\.2@local of board pico is leased by agent "alice" until /);

    const before = await a.server.service.store.listLeases(a.fake.now);
    const missing = await openSession(a, bob.token, { board: 'pico.3@local' });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({
      detail: 'instance "pico.3@local" of board pico not found; the instances of pico here: pico.1@local, pico.2@local (or ask for "pico": any free one)',
    });
    // A malformed instance number of this pool is an instance not found too, not an unknown board.
    for (const malformed of ['pico.0@local', 'pico.01@local', 'pico.-1@local']) {
      const res = await openSession(a, bob.token, { board: malformed });
      expect({ malformed, status: res.status, body: await res.json() }).toEqual({
        malformed,
        status: 404,
        body: { detail: `instance "${malformed}" of board pico not found; the instances of pico here: pico.1@local, pico.2@local (or ask for "pico": any free one)` },
      });
    }
    // A job naming another instance than its session's is refused too.
    const other = await flash(a, alice.token, { board: 'pico.1@local', session: session.session_id, uart_seconds: '0.1' }, picoElf());
    expect(other.status).toBe(409);
    expect(((await other.json()) as { detail: string }).detail).toMatch(/holds instance pico\.2@local of board pico, not pico\.1@local/);
    expect(await a.server.service.store.listLeases(a.fake.now)).toEqual(before);
    // Bob still gets the free one by the pool's name.
    const free = await openSession(a, bob.token, { board: 'pico' });
    expect(((await free.json()) as { instance: string }).instance).toBe('pico.1@local');
  });

  it('queues session requests per pool, first come first served across its instances', async () => {
    const a = await poolApp(2);
    const holders = [];
    for (const label of ['alice', 'bob']) {
      const { token } = await a.register(label);
      holders.push({ token, ...((await (await openSession(a, token, { board: 'pico' })).json()) as { session_id: string; instance: string }) });
    }
    // Carol asks first, then Dave; each waits in pico's queue (its retry timer is armed on the fake clock).
    const waiting = [];
    for (const label of ['carol', 'dave']) {
      const { token } = await a.register(label);
      const timersBefore = a.fake.countTimers();
      waiting.push(openSession(a, token, { board: 'pico', wait_seconds: '60' }).then(async (res) => ({ status: res.status, body: (await res.json()) as { instance: string } })));
      await waitUntil(systemClock, () => (a.fake.countTimers() > timersBefore ? true : undefined), { timeoutMs: 20_000, describe: `${label} waiting in the queue` });
    }
    // Bob's instance frees first: the head of the queue (Carol) gets it, whichever instance it is.
    await a.request(`/api/v1/sessions/${holders[1]!.session_id}/end`, { method: 'POST', headers: bearer(holders[1]!.token) });
    const carol = await waiting[0]!;
    expect(carol).toEqual({ status: 200, body: expect.objectContaining({ instance: holders[1]!.instance }) });
    await a.request(`/api/v1/sessions/${holders[0]!.session_id}/end`, { method: 'POST', headers: bearer(holders[0]!.token) });
    expect(await waiting[1]!).toEqual({ status: 200, body: expect.objectContaining({ instance: holders[0]!.instance }) });
  });

  it('keeps one line per pool across waiters for the pool and for one instance: the earliest waiter that accepts a freed instance gets it (decision 1030)', async () => {
    const a = await poolApp(3, { picoOnly: true });
    const holder = await a.register('holder');
    const held = new Map<string, string>();
    for (const instance of ['pico.1@local', 'pico.2@local', 'pico.3@local']) held.set(instance, ((await (await openSession(a, holder.token, { board: instance, idle_seconds: '3600' })).json()) as { session_id: string }).session_id);
    const end = (token: string, sessionId: string) => a.request(`/api/v1/sessions/${sessionId}/end`, { method: 'POST', headers: bearer(token) });
    const inLine = async (n: number) => {
      let seen = 0;
      await waitUntil(systemClock, async () => ((seen = (await a.server.service.store.sessionQueue.waiters('pico', a.fake.now)).length) >= n ? true : undefined), {
        timeoutMs: 20_000,
        describe: `${n} waiting in pico's line`,
        lastSeen: () => `${seen} waiting`,
      });
    };
    const wait = (token: string, board: string) => openSession(a, token, { board, wait_seconds: '60' }).then(async (res) => ({ status: res.status, body: (await res.json()) as { session_id: string; instance: string } }));
    // The pool's waiter came first: pico.2 freeing goes to it, not to the later waiter for pico.2.
    const [pooled, asking] = [await a.register('pooled'), await a.register('asking')];
    const forPool = wait(pooled.token, 'pico');
    await inLine(1);
    const forInstance = wait(asking.token, 'pico.2@local');
    await inLine(2);
    // The queue route takes the instance's id too, and answers the pool's one line (hostile19 M4).
    const queueOf = async (token: string, board: string) => {
      const res = await a.request(`/api/v1/boards/${board}/queue`, { headers: bearer(token) });
      return { status: res.status, body: await res.json() };
    };
    expect(await queueOf(asking.token, 'pico.2@local')).toEqual({ status: 200, body: { board: 'pico.2@local', waiting: 2, position: 2 } });
    expect(await queueOf(asking.token, 'pico.2%40local')).toEqual({ status: 200, body: { board: 'pico.2@local', waiting: 2, position: 2 } });
    expect(await queueOf(asking.token, 'pico')).toEqual({ status: 200, body: { board: 'pico', waiting: 2, position: 2 } });
    expect(await queueOf(pooled.token, 'pico')).toEqual({ status: 200, body: { board: 'pico', waiting: 2, position: 1 } });
    expect(await queueOf(pooled.token, 'pico.2@local')).toEqual({ status: 200, body: { board: 'pico.2@local', waiting: 2, position: null } });
    expect((await queueOf(pooled.token, 'pico.9@local')).status).toBe(404);
    await end(holder.token, held.get('pico.2@local')!);
    const first = await forPool;
    expect(first).toEqual({ status: 200, body: expect.objectContaining({ instance: 'pico.2@local' }) });
    expect((await a.server.service.store.sessionQueue.waiters('pico', a.fake.now)).map((w) => w.queue)).toEqual(['pico.2@local']);
    await end(pooled.token, first.body.session_id);
    const second = await forInstance;
    expect(second).toEqual({ status: 200, body: expect.objectContaining({ instance: 'pico.2@local' }) });
    // The instance's waiter came first: a waiter for the pool behind it still gets another instance that frees.
    const again = wait(pooled.token, 'pico.2@local');
    await inLine(1);
    const anyOne = wait(asking.token, 'pico');
    await inLine(2);
    await end(holder.token, held.get('pico.1@local')!);
    expect(await anyOne).toEqual({ status: 200, body: expect.objectContaining({ instance: 'pico.1@local' }) });
    await end(asking.token, second.body.session_id);
    expect(await again).toEqual({ status: 200, body: expect.objectContaining({ instance: 'pico.2@local' }) });
  });

  it('lets one agent (a CI pipeline’s parallel jobs on one token) hold several instances and wait for its own next one', async () => {
    const a = await poolApp(2);
    const { token } = await a.register('pipeline');
    const held = [];
    for (let i = 0; i < 2; i++) held.push((await (await openSession(a, token, { board: 'pico' })).json()) as { session_id: string; instance: string });
    expect(held.map((s) => s.instance).sort()).toEqual(['pico.1@local', 'pico.2@local']);
    // Without a wait, the pool being full is a 409 at once, naming the caller's own lease.
    const refused = await openSession(a, token, { board: 'pico' });
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { detail: string }).detail).toMatch(
      /^instance pico\.\d@local of board pico is already leased by you \(one lease per instance; with wait_seconds, a request for board pico waits for its next free instance\) in session /,
    );
    // With a wait, the third job queues behind the pipeline's own sessions and gets the first freed.
    const timersBefore = a.fake.countTimers();
    const third = openSession(a, token, { board: 'pico', wait_seconds: '60' }).then(async (res) => ({ status: res.status, body: (await res.json()) as { instance: string } }));
    await waitUntil(systemClock, () => (a.fake.countTimers() > timersBefore ? true : undefined), { timeoutMs: 20_000, describe: 'the third session waiting in the queue' });
    await a.request(`/api/v1/sessions/${held[0]!.session_id}/end`, { method: 'POST', headers: bearer(token) });
    expect(await third).toEqual({ status: 200, body: expect.objectContaining({ instance: held[0]!.instance }) });
  });

  it('shows each pool’s instances on GET /api/v1/boards, /api/v1/stats and the home page: counts, workers and holders', async () => {
    const a = await poolApp(2, { picoOnly: true });
    const remoteId = await remoteWorker(a, 1, 'pi-one');
    const alice = await a.register('alice');
    await openSession(a, alice.token, { board: 'pico.2@local' });
    const boards = (await (await a.request('/api/v1/boards')).json()) as { boards: Array<{ id: string; status: string; instances?: unknown }> };
    const pico = boards.boards.find((b) => b.id === 'pico')!;
    expect(pico.status).toBe('free');
    expect(pico.instances).toEqual({
      total: 3,
      free: 2,
      busy: 0,
      leased: 1,
      offline: 0,
      quarantined: 0,
      list: [
        { instance: 'pico.1@local', status: 'free', offline_reason: null, quarantined: false, workers: [{ worker_id: 'local', label: expect.any(String), online: true }], held_by: null },
        { instance: 'pico.2@local', status: 'leased', offline_reason: null, quarantined: false, workers: [{ worker_id: 'local', label: expect.any(String), online: true }], held_by: 'alice' },
        { instance: 'pico', status: 'free', offline_reason: null, quarantined: false, workers: [{ worker_id: remoteId, label: 'pi-one', online: true }], held_by: null },
      ],
    });
    // /admin shows the same instances with their workers and holders (decision 0551).
    const admin = (await (await a.request('/admin', { headers: { 'x-admin-token': ADMIN } })).json()) as { boards: Array<{ id: string; instances?: unknown }> };
    expect(admin.boards.find((b) => b.id === 'pico')!.instances).toEqual(pico.instances);
    expect(admin.boards.find((b) => b.id === 'uno')).not.toHaveProperty('instances');
    // A pool of one answers exactly as before: no instances field.
    expect(boards.boards.find((b) => b.id === 'uno')).not.toHaveProperty('instances');
    const stats = (await (await a.request('/api/v1/stats')).json()) as { boards: Array<{ id: string; instances?: { total: number } }> };
    expect(stats.boards.find((b) => b.id === 'pico')!.instances).toMatchObject({ total: 3, leased: 1 });
    expect(await (await a.request('/')).text()).toContain('2 of 3 instances free, 0 busy, 1 leased, 0 offline');
  });

  it('refuses a worker reporting a pool of 0 or above the bound with a 422, keeping what it reported before', async () => {
    const a = await poolApp(1);
    const { token, worker_id } = await createWorkerToken(a.request, { adminToken: ADMIN, label: 'pi-bad' });
    const announce = (poolSize: number) =>
      a.request('/api/v1/worker/announce', {
        method: 'POST',
        headers: { ...bearer(token), 'content-type': 'application/json' },
        body: JSON.stringify({ boards: [{ board: 'pico', backend: 'mock', available: true, reason: null, pool_size: poolSize }] }),
      });
    expect((await announce(2)).status).toBe(200);
    for (const size of [0, 65]) {
      const res = await announce(size);
      expect(res.status).toBe(422);
      expect(JSON.stringify(await res.json())).toMatch(/pool_size/);
    }
    expect((await a.server.service.store.workers.get(worker_id))!.boards).toMatchObject([{ board: 'pico', poolSize: 2 }]);
  });

  it('fails the jobs of every instance of a worker that was killed, with the reason, while the other worker’s instances serve on', async () => {
    const a = await poolApp(1);
    const remoteId = await remoteWorker(a, 2, 'pi-doomed');
    const alice = await a.register('alice');
    const hung = [];
    for (const instance of [`pico.1@${remoteId}`, `pico.2@${remoteId}`]) {
      hung.push(await submit(a, alice.token, { board: instance, uart_seconds: '0.1' }, withFault('run-hang')));
    }
    for (const job of hung) await a.jobReaches(job.job_id, 'running');
    await workers[0]!.close();
    for (let i = 0; i < 10; i++) await a.fake.tickAsync(5_000);
    for (const job of hung) {
      await a.jobReaches(job.job_id, 'failed');
      expect((await getJob(a, alice.token, job.job_id)).failure).toMatchObject({
        kind: 'interrupted',
        message: expect.stringMatching(/^worker \S+ stopped answering while this job was running/),
      });
    }
    // The pool goes on: its instance on the server's own worker takes the next job.
    const next = await submit(a, alice.token, { board: 'pico', uart_seconds: '0.1' }, picoElf());
    expect(next.instance).toBeUndefined();
    await a.jobReaches(next.job_id, 'done');
  });
});
