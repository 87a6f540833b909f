import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { HilbenchProcesses, until } from '../support/hilbench-processes.js';
import { createClock } from '@sinonjs/fake-timers';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers, systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { type BenchTestApp, startBenchTestApp, TEST_START_MS } from '../support/bench-test-app.js';
import { createWorkerToken, startLabWorker } from '../support/lab-worker.js';
import { createTestDatabase } from '../support/postgres-test-database.js';
import { picoTestElf } from '../support/make-elf.js';
import { deferred, FakeBenchBackend } from './board-health-fake-backend.js';
import { ClockedUartBackend } from './clocked-uart-backend.js';
import { hilbenchCli as cli } from '../support/compiled-cli.js';

/**
 * Server replicas on one PostgreSQL database (issue 10): whichever replica an agent reaches, a
 * board is leased once, a job runs once, and a replica killed with SIGKILL loses nothing accepted.
 */

const ADMIN = 'replica-admin';
const BOARDS = ['pico', 'uno', 'netduinoplus2', 'mps2-an385'];
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function twoReplicas(): Promise<{ a: BenchTestApp; b: BenchTestApp; fake: ReturnType<typeof createClock> }> {
  const database = await createTestDatabase({ migrated: 'bench' });
  cleanups.push(database.drop);
  const fake = createClock(TEST_START_MS);
  const config = { fake, databaseUrl: database.url, localWorker: false as const, adminToken: ADMIN };
  const a = await startBenchTestApp(config);
  cleanups.push(() => a.close());
  const b = await startBenchTestApp(config);
  cleanups.push(() => b.close());
  return { a, b, fake };
}

describe('replicas sharing PostgreSQL', () => {
  it('leases each of 4 boards exactly once to 100 agents racing through both replicas, and runs each job once', { timeout: 120_000 }, async () => {
    const { a, b, fake } = await twoReplicas();
    const replicas = [a, b];
    // A worker on replica b serves the boards (a lab server leases only boards a worker serves).
    const { token } = await createWorkerToken(b.request, { adminToken: ADMIN, label: 'farm' });
    const worker = await startLabWorker({ serverUrl: b.url, token, clock: clockFromFakeTimers(fake), boards: BOARDS });
    cleanups.push(worker.close);
    // Replica a learns of the worker's boards once its availability cache (5 s) runs out.
    await fake.tickAsync(5_000);
    const agents = await Promise.all(Array.from({ length: 100 }, (_, i) => replicas[i % 2]!.register(`agent-${i}`)));
    const answers = await Promise.all(
      agents.map((agent, i) =>
        replicas[(i + 1) % 2]!.request('/api/v1/sessions', {
          method: 'POST',
          headers: { authorization: `Bearer ${agent.token}` },
          body: new URLSearchParams({ board: BOARDS[i % BOARDS.length]!, idle_seconds: '600' }),
        }),
      ),
    );
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(4);
    expect(statuses.filter((s) => s !== 200 && s !== 409)).toEqual([]);
    const winners = await Promise.all(answers.map(async (r, i) => (r.status === 200 ? { i, session: (await r.json()) as { session_id: string; board: string } } : undefined)));
    const held = winners.filter((w) => w !== undefined);
    expect(new Set(held.map((w) => w.session.board))).toEqual(new Set(BOARDS));
    // Both replicas see the same leases.
    for (const replica of replicas) {
      const { boards } = (await (await replica.request('/api/v1/boards')).json()) as { boards: Array<{ id: string; status: string }> };
      for (const id of BOARDS) expect(boards.find((x) => x.id === id)!.status, id).not.toBe('free');
    }

    // The jobs submitted through replica a run on replica b's worker, each once.
    const jobIds: string[] = [];
    for (const { i, session } of held) {
      const body = new FormData();
      body.set('board', session.board);
      body.set('session', session.session_id);
      body.set('uart_seconds', '0.2');
      body.set('firmware', new Blob([picoTestElf()], { type: 'application/octet-stream' }), 'fw.elf');
      const res = await a.request('/api/v1/jobs/flash', { method: 'POST', headers: { authorization: `Bearer ${agents[i]!.token}` }, body });
      // pico's ELF on other boards is refused by the image check: only pico's job is queued there.
      if (session.board === 'pico') {
        expect(res.status, await res.clone().text()).toBe(200);
        jobIds.push(((await res.json()) as { job_id: string }).job_id);
      }
    }
    // Replica b's worker learns of a job queued through replica a on its gateway's next look at the store.
    // The worker's HTTP calls and the database are real I/O: each look advances the fake clock by a
    // poll interval and gives the I/O real time (bounded by the wait's own timeout).
    for (const id of jobIds) {
      await waitUntil(systemClock, async () => ((await b.server.service.store.getJob(id))?.state === 'done' ? true : undefined), {
        timeoutMs: 30_000,
        pollMs: 50,
        describe: `job ${id} done through replica b's worker`,
        pause: async (ms) => {
          await fake.tickAsync(2_000);
          await new Promise((r) => setTimeout(r, ms));
        },
      });
      expect((await a.server.service.store.getJob(id))?.state).toBe('done');
    }
  });
});

describe('serial input across replicas', () => {
  it('reaches the worker connected to replica b whichever replica the agent sends it to, in order', { timeout: 120_000 }, async () => {
    const { a, b, fake } = await twoReplicas();
    const { token } = await createWorkerToken(b.request, { adminToken: ADMIN, label: 'echo' });
    const clock = clockFromFakeTimers(fake);
    const worker = await startLabWorker({ serverUrl: b.url, token, clock, boards: ['pico'], backends: { mock: new ClockedUartBackend(clock) } });
    cleanups.push(worker.close);
    await fake.tickAsync(5_000);
    const agent = await a.register('typist');
    const body = new FormData();
    body.set('board', 'pico');
    body.set('uart_seconds', '20');
    body.set('firmware', new Blob([picoTestElf()], { type: 'application/octet-stream' }), 'fw.elf');
    const submitted = await a.request('/api/v1/jobs/flash', { method: 'POST', headers: { authorization: `Bearer ${agent.token}` }, body });
    expect(submitted.status, await submitted.clone().text()).toBe(200);
    const { job_id: jobId } = (await submitted.json()) as { job_id: string };
    // Each look advances the fake clock by a poll interval and gives the real I/O real time.
    const ticking = { timeoutMs: 30_000, pollMs: 50, pause: async (ms: number) => {
      await fake.tickAsync(2_000);
      await new Promise((r) => setTimeout(r, ms));
    } };
    await waitUntil(systemClock, async () => ((await b.server.service.store.getJob(jobId))?.state === 'running' ? true : undefined), { ...ticking, describe: `job ${jobId} running` });
    const send = (replica: BenchTestApp, text: string) =>
      replica.request(`/api/v1/jobs/${jobId}/uart`, { method: 'POST', headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ text }) });

    // Through the worker's own replica: it is woken at once and the answer hears it was written.
    const viaB = await send(b, '<b>');
    expect(await viaB.json()).toMatchObject({ input_seq: 1, delivery: 'written' });
    // Through the other replica: queued in the database, fetched on the worker's replica's next look.
    const viaA = send(a, '<a>');
    const answered = await waitUntil(systemClock, async () => Promise.race([viaA.then((r) => r), new Promise<undefined>((r) => setTimeout(() => r(undefined), 10))]), {
      ...ticking,
      describe: 'the answer to input sent through replica a',
    });
    expect(answered.status).toBe(200);
    expect(await answered.json()).toMatchObject({ input_seq: 2, delivery: expect.stringMatching(/^(written|queued)$/) });
    await waitUntil(systemClock, async () => ((await b.server.service.store.getJob(jobId))?.state === 'done' ? true : undefined), { ...ticking, describe: `job ${jobId} done` });
    const done = (await (await a.request(`/api/v1/jobs/${jobId}`, { headers: { authorization: `Bearer ${agent.token}` } })).json()) as { uart: { text: string } };
    expect(done.uart.text.replace(/line \d+\r\n/g, '')).toBe('<b><a>');
  });
});

describe('board health across replicas', () => {
  it('shows a quarantine reported through replica b on replica a, and a health check asked through a runs on b’s worker and holds the board on b', { timeout: 120_000 }, async () => {
    const { a, b, fake } = await twoReplicas();
    const { token } = await createWorkerToken(a.request, { adminToken: ADMIN, label: 'probe-pi' });
    const clock = clockFromFakeTimers(fake);
    let bench: FakeBenchBackend | undefined;
    const worker = await startLabWorker({
      serverUrl: b.url,
      token,
      clock,
      boards: ['pico'],
      backends: ({ quarantineStore }) => {
        bench = new FakeBenchBackend({ clock, store: quarantineStore, attached: ['pico'], quarantineAfterFailures: 3, withHealthCheck: true });
        return { probe: bench };
      },
      choice: 'probe',
    });
    cleanups.push(worker.close);
    await fake.tickAsync(5_000);
    const ticking = { timeoutMs: 30_000, pollMs: 50, pause: async (ms: number) => {
      await fake.tickAsync(2_000);
      await new Promise((r) => setTimeout(r, ms));
    } };
    const agent = await b.register('breaker');
    bench!.brokenProbe.add('pico');
    for (let i = 0; i < 3; i++) {
      const body = new FormData();
      body.set('board', 'pico');
      body.set('uart_seconds', '0.2');
      body.set('firmware', new Blob([picoTestElf()], { type: 'application/octet-stream' }), 'fw.elf');
      const res = await b.request('/api/v1/jobs/flash', { method: 'POST', headers: { authorization: `Bearer ${agent.token}` }, body });
      expect(res.status, await res.clone().text()).toBe(200);
      const { job_id: jobId } = (await res.json()) as { job_id: string };
      await b.jobReaches(jobId, 'failed');
    }
    const picoOn = async (replica: BenchTestApp) => {
      const { boards } = (await (await replica.request('/api/v1/boards')).json()) as { boards: Array<{ id: string; status: string; offline_reason: string | null }> };
      return boards.find((x) => x.id === 'pico')!;
    };
    // Replica a learns of it from the database once its availability cache (5 s) runs out.
    await fake.tickAsync(5_000);
    expect(await picoOn(a)).toMatchObject({ status: 'offline', offline_reason: expect.stringMatching(/^quarantined after 3 consecutive infrastructure failures: /) });

    bench!.brokenProbe.delete('pico');
    const hold = deferred();
    bench!.holdHealthCheck = hold.promise;
    const checking = a.request('/admin/boards/pico/health-check', { method: 'POST', headers: { 'x-admin-token': ADMIN } });
    // The worker talks to b: it takes the request on b's next look at the database.
    await waitUntil(systemClock, async () => ((await b.server.service.store.healthChecks.active())[0]?.state === 'running' ? true : undefined), {
      ...ticking,
      describe: 'the health check running on the worker',
    });
    await bench!.healthCheckStarted.promise;
    const released = await b.request('/admin/boards/pico/release', { method: 'POST', headers: { 'x-admin-token': ADMIN } });
    expect(released.status).toBe(200);
    // Released: back once the worker's next heartbeat says so, but held by the check asked through a.
    await waitUntil(systemClock, async () => ((await picoOn(b)).status === 'busy' ? true : undefined), { ...ticking, describe: 'pico busy with its health check on b' });
    const session = await b.request('/api/v1/sessions', { method: 'POST', headers: { authorization: `Bearer ${agent.token}` }, body: new URLSearchParams({ board: 'pico' }) });
    expect([session.status, ((await session.json()) as { detail: string }).detail]).toEqual([409, expect.stringMatching(/^board pico is running a health check started by an administrator at /)]);
    hold.resolve();
    const answered = await waitUntil(systemClock, async () => Promise.race([checking, new Promise<undefined>((r) => setTimeout(() => r(undefined), 10))]), {
      ...ticking,
      describe: 'the answer to the health check asked through replica a',
    });
    expect(await answered.json()).toMatchObject({ board: 'pico', passed: true, health: { quarantined: false } });
  });
});

// Processes: two `hilbench serve --database-url` replicas and a worker on one of them.
const processes = new HilbenchProcesses();
afterAll(async () => {
  await processes.killAll();
});

const start = (args: string[], ready: RegExp) => processes.start(args, ready);

describe('a replica killed with SIGKILL', () => {
  it('loses no job it accepted: the other replica and the worker carry on', { timeout: 180_000 }, async () => {
    const database = await createTestDatabase({ migrated: 'bench' });
    cleanups.push(database.drop);
    const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-replicas-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const replica = (name: string) =>
      start(
        ['serve', '--database-url', database.url, '--no-local-worker', '--no-relay', '--port', '0', '--data-dir', path.join(dir, name), '--admin-token', ADMIN,
          '--worker-heartbeat-seconds', '1', '--worker-claim-seconds', '3', '--worker-offline-after-seconds', '3'],
        /bench service on (http:\/\/127\.0\.0\.1:\d+)/,
      );
    const first = await replica('a');
    const second = await replica('b');
    const [urlA, urlB] = [first.match[1]!, second.match[1]!];
    const created = await execa('node', [cli, 'worker-token', 'create', '--server', urlA, '--admin-token', ADMIN, '--label', 'sim-farm']);
    const tokenFile = path.join(dir, 'worker.token');
    writeFileSync(tokenFile, created.stdout.split('\n').at(-1)!.trim(), { mode: 0o600 });
    // A pool of two (decision 0510): the worker claims while a job runs. It used to abort that claim
    // when the job ended, and a job the server handed out on it was lost (failed as interrupted
    // once its claim lapsed): every other job of the session here.
    await start(['worker', '--server', urlB, '--token-file', tokenFile, '--backend', 'mock', '--boards', 'pico', '--pool-size', '2', '--cache-dir', path.join(dir, 'cache')], /serving pico/);

    await until('pico free through replica a', async () => {
      const { boards } = (await (await fetch(`${urlA}/api/v1/boards`)).json()) as { boards: Array<{ id: string; status: string }> };
      return boards.find((x) => x.id === 'pico')?.status === 'free';
    });
    const registered = (await (await fetch(`${urlA}/api/v1/agents/register`, { method: 'POST', body: new URLSearchParams({ label: 'a' }) })).json()) as { token: string };
    const auth = { authorization: `Bearer ${registered.token}` };
    const session = (await (await fetch(`${urlA}/api/v1/sessions`, { method: 'POST', headers: auth, body: new URLSearchParams({ board: 'pico', idle_seconds: '600' }) })).json()) as {
      session_id: string;
    };
    const accepted: string[] = [];
    for (let i = 0; i < 5; i++) {
      const body = new FormData();
      body.set('board', 'pico');
      body.set('session', session.session_id);
      body.set('uart_seconds', '0.3');
      body.set('firmware', new Blob([picoTestElf()], { type: 'application/octet-stream' }), 'fw.elf');
      const res = await fetch(`${urlA}/api/v1/jobs/flash`, { method: 'POST', headers: auth, body });
      expect(res.status, await res.clone().text()).toBe(200);
      accepted.push(((await res.json()) as { job_id: string }).job_id);
    }
    first.child.kill('SIGKILL');
    await first.child;
    const state = async (id: string) => ((await (await fetch(`${urlB}/api/v1/jobs/${id}`, { headers: auth })).json()) as { state: string }).state;
    for (const id of accepted) await until(`job ${id} ended through replica b`, async () => ['done', 'failed'].includes(await state(id)));
    // Each ended done: none was handed to the worker on a claim it threw away.
    expect(await Promise.all(accepted.map(state))).toEqual(accepted.map(() => 'done'));
  });
});
