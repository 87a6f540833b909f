import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { type BenchTestApp, startBenchTestApp, TEST_START_MS } from '../support/bench-test-app.js';
import { bearer } from './bench-job-requests.js';

/** Waiting for a busy board instead of polling 409s (issue 11): a FIFO queue per board, bounded. */

let app: BenchTestApp;
afterEach(async () => {
  await app.close();
});

const open = (token: string, fields: Record<string, string>) =>
  app.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams({ board: 'pico', ...fields }) });

describe('POST /api/v1/sessions with wait_seconds', () => {
  it('grants the lease to waiters first come first served as the holder lets go', async () => {
    app = await startBenchTestApp();
    const [alice, bob, carol] = [await app.register('alice'), await app.register('bob'), await app.register('carol')];
    const held = (await (await open(alice.token, {})).json()) as { session_id: string };
    const bobWaits = open(bob.token, { wait_seconds: '60' });
    await app.fake.tickAsync(100);
    const carolWaits = open(carol.token, { wait_seconds: '60' });
    await app.fake.tickAsync(100);
    expect((await app.request(`/api/v1/sessions/${held.session_id}/end`, { method: 'POST', headers: bearer(alice.token) })).status).toBe(200);
    const bobs = await bobWaits;
    expect(bobs.status).toBe(200);
    const bobSession = (await bobs.json()) as { session_id: string; board: string };
    expect(bobSession.board).toBe('pico');
    // Carol is next: she gets the board when bob ends his session.
    await app.fake.tickAsync(1_000);
    expect((await app.request(`/api/v1/sessions/${bobSession.session_id}/end`, { method: 'POST', headers: bearer(bob.token) })).status).toBe(200);
    expect((await carolWaits).status).toBe(200);
  });

  it('answers 409 with the queue position and the holder when the wait runs out; 422 beyond 300 s', async () => {
    app = await startBenchTestApp();
    const [alice, bob, carol] = [await app.register('alice'), await app.register('bob'), await app.register('carol')];
    expect((await open(alice.token, { idle_seconds: '3600' })).status).toBe(200);
    const bobWaits = open(bob.token, { wait_seconds: '30' });
    await app.fake.tickAsync(100);
    const carolWaits = open(carol.token, { wait_seconds: '5' });
    for (let i = 0; i < 6; i++) await app.fake.tickAsync(1_000);
    const carols = await carolWaits;
    expect(carols.status).toBe(409);
    expect(((await carols.json()) as { detail: string }).detail).toMatch(
      /^board pico is leased by agent "alice" until .* unless renewed \(retry_after_seconds=\d+\); you were number 2 in the queue for pico when your wait of 5 s ran out$/,
    );
    for (let i = 0; i < 26; i++) await app.fake.tickAsync(1_000);
    expect(((await (await bobWaits).json()) as { detail: string }).detail).toMatch(/you were number 1 in the queue for pico/);
    expect((await open(bob.token, { wait_seconds: '301' })).status).toBe(422);
  });
});

describe('a waiter whose client went away (hostile19 M1)', () => {
  it('ends a session granted while its client was leaving, at once, and the next waiter gets the board with no clock time passing', async () => {
    app = await startBenchTestApp();
    const { store, bench } = app.server.service;
    const [alice, bob, carol] = [await app.register('alice'), await app.register('bob'), await app.register('carol')];
    const held = (await (await open(alice.token, { idle_seconds: '3600' })).json()) as { session_id: string };
    // Bob's client goes away while the store writes his grant: the race of a client leaving as the board frees.
    const bobClient = new AbortController();
    const openInStore = store.openSession.bind(store);
    store.openSession = async (session, options) => {
      const result = await openInStore(session, options);
      if (session.agentId === bob.agentId && result.kind === 'opened') bobClient.abort();
      return result;
    };
    const bobAgent = (await store.getAgent(bob.agentId))!;
    const bobWaits = bench.openSession(bobAgent, 'pico', 90, { seconds: 60, signal: bobClient.signal }).then(
      (session) => ({ granted: session.sessionId }),
      (err: Error) => ({ refused: err.message }),
    );
    await waitUntil(systemClock, async () => ((await store.sessionQueue.waiters('pico', app.fake.now)).length >= 1 ? true : undefined), { timeoutMs: 20_000, describe: 'bob waiting' });
    const carolWaits = open(carol.token, { wait_seconds: '60' });
    await waitUntil(systemClock, async () => ((await store.sessionQueue.waiters('pico', app.fake.now)).length >= 2 ? true : undefined), { timeoutMs: 20_000, describe: 'carol waiting' });
    const nowMs = app.fake.now;
    expect((await app.request(`/api/v1/sessions/${held.session_id}/end`, { method: 'POST', headers: bearer(alice.token) })).status).toBe(200);
    expect(await bobWaits).toEqual({ refused: expect.stringMatching(/went away/) });
    const carols = await carolWaits;
    expect(carols.status).toBe(200);
    expect(((await carols.json()) as { board: string }).board).toBe('pico');
    const bobs = (await store.listActiveSessions(app.fake.now)).filter((s) => s.agentId === bob.agentId);
    expect(bobs).toEqual([]);
    expect(app.fake.now).toBe(nowMs);
  });
});

describe('a waiter whose connection closed as the board freed (hostile19 M1, over HTTP)', () => {
  it('hears the client leave before answering: the board goes to the next waiter, not to the closed connection', async () => {
    app = await startBenchTestApp();
    const { store, bench } = app.server.service;
    const [alice, bob, carol] = [await app.register('alice'), await app.register('bob'), await app.register('carol')];
    const held = (await (await open(alice.token, { idle_seconds: '3600' })).json()) as { session_id: string };
    // Bob waits on a raw connection, so the test closes it exactly when it wants.
    const body = 'board=pico&wait_seconds=60';
    const bobSocket = net.connect(Number(new URL(app.url).port), '127.0.0.1');
    bobSocket.on('error', () => undefined);
    await new Promise<void>((resolve) => bobSocket.once('connect', () => resolve()));
    bobSocket.write(`POST /api/v1/sessions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${bob.token}\r\ncontent-type: application/x-www-form-urlencoded\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
    const inLine = (n: number) =>
      waitUntil(systemClock, async () => ((await store.sessionQueue.waiters('pico', app.fake.now)).length >= n ? true : undefined), { timeoutMs: 20_000, describe: `${n} waiting` });
    await inLine(1);
    const carolWaits = open(carol.token, { wait_seconds: '60' });
    await inLine(2);
    // Bob's client leaves, and in the same turn alice ends her session in process: the grant to bob
    // runs before his connection's close is read, unless the bench hears it first.
    bobSocket.destroy();
    await bench.endSession((await store.getAgent(alice.agentId))!, held.session_id);
    const carols = await carolWaits;
    expect(carols.status).toBe(200);
    expect((await store.listActiveSessions(app.fake.now)).filter((s) => s.agentId === bob.agentId)).toEqual([]);
  });
});

describe('who waits, on /admin and the console (decision 0605)', () => {
  const ADMIN = 'queue-admin-token';
  const waiting = async (n: number) => {
    let seen = 0;
    await waitUntil(
      systemClock,
      async () => {
        seen = (await app.server.service.store.sessionQueue.waiters('pico', app.fake.now)).length;
        return seen >= n ? true : undefined;
      },
      { timeoutMs: 20_000, describe: `${n} session requests waiting in the store's queue`, lastSeen: () => `${seen} waiting` },
    );
  };

  it("lists each board's waiters with agent, queue, place and since; the console shows them", async () => {
    app = await startBenchTestApp({ adminToken: ADMIN, localWorker: { poolSizes: { byBoard: { pico: 2 } } } });
    const [alice, bob, carol, dave] = [await app.register('alice'), await app.register('bob'), await app.register('carol'), await app.register('dave')];
    for (let i = 0; i < 2; i++) expect((await open(alice.token, { idle_seconds: '3600' })).status).toBe(200);
    const bobWaits = open(bob.token, { wait_seconds: '5' });
    await waiting(1);
    await app.fake.tickAsync(1_000);
    const carolWaits = open(carol.token, { board: 'pico.2@local', wait_seconds: '5' });
    await waiting(2);
    const daveWaits = open(dave.token, { wait_seconds: '5' });
    await waiting(3);

    const admin = (await (await app.request('/admin', { headers: { 'x-admin-token': ADMIN } })).json()) as {
      boards: Array<{ id: string; waiting: Array<{ agent_id: string; agent_label: string; queue: string; position: number; since: string }> }>;
    };
    const pico = admin.boards.find((b) => b.id === 'pico')!;
    expect(pico.waiting).toEqual([
      { agent_id: bob.agentId, agent_label: 'bob', queue: 'pico', position: 1, since: new Date(TEST_START_MS).toISOString() },
      { agent_id: carol.agentId, agent_label: 'carol', queue: 'pico.2@local', position: 2, since: new Date(TEST_START_MS + 1_000).toISOString() },
      { agent_id: dave.agentId, agent_label: 'dave', queue: 'pico', position: 3, since: new Date(TEST_START_MS + 1_000).toISOString() },
    ]);
    expect(admin.boards.find((b) => b.id === 'uno')!.waiting).toEqual([]);

    const signInPage = await app.request('/console/sign-in');
    const csrf = /name="csrf" value="([^"]+)"/.exec(await signInPage.text())![1]!;
    const signedIn = await app.request('/console/sign-in', { method: 'POST', redirect: 'manual', body: new URLSearchParams({ token: ADMIN, csrf }) });
    const cookie = signedIn.headers.get('set-cookie')!.split(';')[0]!;
    const console = await (await app.request('/console', { headers: { cookie } })).text();
    const section = /<section id="waiting">[\s\S]*?<\/section>/.exec(console)![0];
    expect(section).toMatch(/<code>pico<\/code><\/td><td>1<\/td><td>bob \(ag_[^)]+\)<\/td><td>2026-01-01 00:00:00 UTC<\/td>[\s\S]*<code>pico\.2@local<\/code><\/td><td>2<\/td><td>carol[\s\S]*<code>pico<\/code><\/td><td>3<\/td><td>dave/);

    // The waits run out; the queue empties and says so.
    for (let i = 0; i < 6; i++) await app.fake.tickAsync(1_000);
    expect((await Promise.all([bobWaits, carolWaits, daveWaits])).map((r) => r.status)).toEqual([409, 409, 409]);
    expect(await (await app.request('/console', { headers: { cookie } })).text()).toContain('Nobody is waiting for a board.');
  });
});
