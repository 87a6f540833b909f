import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { EM_AVR } from '../../core/elf.js';
import { waitUntil } from '../../core/wait.js';
import { defaultBenchLimits } from '../../server/bench/domain/bench-limits.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { makeElf, picoTestElf } from '../support/make-elf.js';
import { createTestDatabase } from '../support/postgres-test-database.js';
import { bearer, flash } from './bench-job-requests.js';

/**
 * An agent opening long polls by the thousand (decision 0471), on both stores: it holds at most
 * `maxLongPollsPerAgent` requests open at once (job `?wait=`, UART streams, serial input, session
 * queues); one more is a 429 with `Retry-After`, answered before it looks at the store or queues
 * anything, and a slot frees when its poll answers or its client goes. Other agents wait as before.
 */

const ADMIN = 'admin-secret';
const MAX = defaultBenchLimits.maxLongPollsPerAgent;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const BOARDS = [
  { board: 'pico', backend: 'probe', available: true },
  { board: 'uno', backend: 'sim', available: true },
];

/** A lab server whose worker serves the pico and the uno but claims nothing; a job of agent alice queued on the pico. */
async function lab(store: 'sqlite' | 'postgres'): Promise<{ app: BenchTestApp; alice: string; jobId: string; worker: string }> {
  const database = store === 'postgres' ? await createTestDatabase({ migrated: 'bench' }) : undefined;
  if (database) cleanups.push(database.drop);
  const app = await startBenchTestApp({ localWorker: false, adminToken: ADMIN, ...(database ? { databaseUrl: database.url } : {}) });
  cleanups.push(() => app.close());
  const created = await app.request('/admin/workers', { method: 'POST', headers: { 'x-admin-token': ADMIN }, body: new URLSearchParams({ label: 'pi' }) });
  const { token: worker } = (await created.json()) as { token: string };
  const announced = await app.request('/api/v1/worker/announce', { method: 'POST', headers: { ...bearer(worker), 'content-type': 'application/json' }, body: JSON.stringify({ boards: BOARDS }) });
  expect(announced.status).toBe(200);
  app.fake.tick(5_000); // past the availability cache
  const { token: alice } = await app.register('alice');
  const submitted = await flash(app, alice, { board: 'pico', uart_seconds: '5' }, picoTestElf());
  expect(submitted.status, await submitted.clone().text()).toBe(200);
  return { app, alice, worker, jobId: ((await submitted.json()) as { job_id: string }).job_id };
}

/** Waits (bounded) until `count` more timers are set on the server's clock than `before`: that many polls wait. */
const timersSet = (app: BenchTestApp, before: number, count: number, what: string) =>
  waitUntil(systemClock, () => (app.fake.countTimers() >= before + count ? true : undefined), {
    timeoutMs: 20_000,
    pollMs: 2,
    describe: what,
    lastSeen: () => `${app.fake.countTimers() - before} timers set`,
  });

describe.each(['sqlite', 'postgres'] as const)('an agent opening long polls by the thousand (%s store)', (store) => {
  it(`holds at most ${MAX} requests open at once; more is a 429 with Retry-After that changes nothing, and a slot frees when a poll answers or its client goes`, async () => {
    const { app, alice, jobId, worker } = await lab(store);
    const asAlice = bearer(alice);
    const streams: AbortController[] = [];
    cleanups.push(async () => streams.forEach((s) => s.abort()));
    const openStream = async () => {
      const gone = new AbortController();
      streams.push(gone);
      return { res: await app.request(`/api/v1/jobs/${jobId}/uart`, { headers: asAlice, signal: gone.signal }), gone };
    };

    // Half of the bound in ?wait= (each sets its wait and its poll timer), the other half in UART streams.
    const waits = MAX / 2;
    const before = app.fake.countTimers();
    const waiting = Array.from({ length: waits }, () => app.request(`/api/v1/jobs/${jobId}?wait=60`, { headers: asAlice }));
    // Awaited below; should the test fail first, closing the app ends them without an unhandled rejection.
    for (const request of waiting) request.catch(() => undefined);
    await timersSet(app, before, 2 * waits, `${waits} ?wait= requests to wait`);
    const open: Array<{ res: Response; gone: AbortController }> = [];
    for (let i = waits; i < MAX; i++) open.push(await openStream());
    expect(open.map((s) => s.res.status)).toEqual(Array.from({ length: MAX - waits }, () => 200));

    // Bob leases the uno, so alice's session request with wait_seconds would queue.
    const { token: bob } = await app.register('bob');
    const bobSession = await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(bob), body: new URLSearchParams({ board: 'uno', idle_seconds: '600' }) });
    expect(bobSession.status).toBe(200);
    const { session_id: bobSessionId } = (await bobSession.json()) as { session_id: string };

    // One more of each kind: refused at once. Without the bound these would wait for a clock that does not move.
    const refused = (what: string, path: string, init: RequestInit = {}) =>
      app.request(path, { ...init, headers: { ...asAlice, ...init.headers }, signal: AbortSignal.timeout(10_000) }).catch((err: unknown) => {
        throw new Error(`${what} was not refused but held open (no bound on an agent's long polls): ${String(err)}`);
      });
    const overBound: Array<[string, Response]> = [
      ['?wait=', await refused('?wait=', `/api/v1/jobs/${jobId}?wait=60`)],
      ['UART stream', await refused('UART stream', `/api/v1/jobs/${jobId}/uart`)],
      ['serial input', await refused('serial input', `/api/v1/jobs/${jobId}/uart`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"text": "hi"}' })],
      ['session queue', await refused('session queue', '/api/v1/sessions', { method: 'POST', body: new URLSearchParams({ board: 'uno', idle_seconds: '60', wait_seconds: '30' }) })],
    ];
    for (const [what, res] of overBound) {
      expect([what, res.status, res.headers.get('retry-after')]).toEqual([what, 429, '1']);
      expect([what, ((await res.json()) as { detail: string }).detail]).toEqual([what, expect.stringMatching(new RegExp(`^agent ag_[\\w-]+ already holds ${MAX} long polls on this server .*: let one answer \\(or end it\\) before opening another$`))]);
    }
    // Nothing changed: no serial input was queued, alice holds no session.
    expect(await app.server.service.store.serialInput.writtenThrough(jobId)).toBe(0);

    // Another agent is not bounded by alice's polls: bob's ?wait= of his own job waits.
    const bobJob = await flash(app, bob, { board: 'uno', uart_seconds: '5', session: bobSessionId }, makeElf({ machine: EM_AVR, segments: [{ paddr: 0, data: new Uint8Array(8) }] }));
    expect(bobJob.status, await bobJob.clone().text()).toBe(200);
    const { job_id: bobJobId } = (await bobJob.json()) as { job_id: string };
    const bobBefore = app.fake.countTimers();
    const bobWaits = app.request(`/api/v1/jobs/${bobJobId}?wait=60`, { headers: bearer(bob) });
    await timersSet(app, bobBefore, 2, "bob's ?wait= to wait");

    // A client going away frees its slot: a new stream of alice opens once the server noticed.
    open[0]!.gone.abort();
    const reopened = await waitUntil(
      systemClock,
      async () => {
        const { res, gone } = await openStream();
        if (res.status === 200) return res;
        gone.abort();
        return undefined;
      },
      { timeoutMs: 20_000, pollMs: 20, describe: 'a stream to open after another one’s client went away' },
    );
    expect(reopened.status).toBe(200);

    // The ?wait= requests answer when their wait ends (the job still queued), and free their slots.
    app.fake.tick(60_000);
    for (const answer of [...waiting, bobWaits]) expect((await answer).status).toBe(200);
    const more = await Promise.all(Array.from({ length: waits }, () => openStream()));
    expect(more.map((s) => s.res.status)).toEqual(Array.from({ length: waits }, () => 200));

    // Streams that end with their job free their slots too: the worker runs the job to its end.
    const asWorker = { ...bearer(worker), 'content-type': 'application/json' };
    const claimed = await app.request('/api/v1/worker/claim', { method: 'POST', headers: asWorker, body: JSON.stringify({ boards: ['pico'], wait_seconds: 0 }) });
    expect(((await claimed.json()) as { job: { job_id: string } }).job.job_id).toBe(jobId);
    const done = { outcome: { state: 'done', uart: { time_base: 'wall', dropped_bytes: 0, chunks: [] }, stop: { reason: 'elapsed', elapsed_ns: 1 }, flash_ms: 1, run_ms: 1 } };
    expect((await app.request(`/api/v1/worker/jobs/${jobId}/finish`, { method: 'POST', headers: asWorker, body: JSON.stringify(done) })).status).toBe(200);
    const held = [...open.slice(1).map((s) => s.res), reopened, ...more.map((s) => s.res)];
    expect(held).toHaveLength(MAX);
    for (const stream of held) expect(await stream.text()).toContain('event: end');
    // Once the server saw them close, alice's next request is answered, not refused.
    const answered = await waitUntil(
      systemClock,
      async () => {
        const res = await app.request(`/api/v1/jobs/${jobId}?wait=60`, { headers: asAlice });
        return res.status === 429 ? undefined : res;
      },
      { timeoutMs: 20_000, pollMs: 20, describe: "a slot of alice's to free after her streams ended with the job" },
    );
    expect([answered.status, ((await answered.json()) as { state: string }).state]).toEqual([200, 'done']);
  });
});
