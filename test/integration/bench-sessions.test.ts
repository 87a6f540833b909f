import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MockBackend } from '../../backends/mock/mock-backend.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';

/** Sessions over real HTTP: leases, validation, auth, expiry on the fake clock, restarts. */

let app: BenchTestApp;
beforeEach(async () => {
  app = await startBenchTestApp();
});
afterEach(async () => {
  await app.close();
});

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const form = (fields: Record<string, string>) => new URLSearchParams(fields);

async function open(token: string, fields: Record<string, string>) {
  return app.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: form(fields) });
}

async function boardStatus(id: string) {
  const res = await app.request('/api/v1/boards');
  const body = (await res.json()) as { boards: Array<{ id: string; status: string; lease_expires_at: string | null }> };
  return body.boards.find((b) => b.id === id)!;
}

describe('POST /api/v1/sessions', () => {
  it('opens a lease with the default idle time and answers the session record', async () => {
    const { token } = await app.register('alice');
    const res = await open(token, { board: 'pico' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toEqual({
      session_id: expect.stringMatching(/^ses_[A-Za-z0-9_-]{22}$/),
      board: 'pico',
      state: 'active',
      idle_seconds: 90,
      created_at: '2026-01-01T00:00:00.000Z',
      expires_at: '2026-01-01T00:01:30.000Z',
      ended_at: null,
      last_heartbeat_at: null,
    });
    expect(await boardStatus('pico')).toMatchObject({ status: 'leased', lease_expires_at: '2026-01-01T00:01:30.000Z' });
  });

  it('accepts fractional idle_seconds as numeric text', async () => {
    const { token } = await app.register();
    const res = await open(token, { board: 'uno', idle_seconds: ' 12.5 ' });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ idle_seconds: 12.5, expires_at: '2026-01-01T00:00:12.500Z' });
  });

  it('reports every failing field at once, in field order, exactly as FastAPI does', async () => {
    const { token } = await app.register();
    const res = await open(token, { idle_seconds: 'abc' });
    expect(res.status).toBe(422);
    expect(await res.text()).toBe(
      JSON.stringify({
        detail: [
          { type: 'missing', loc: ['body', 'board'], msg: 'Field required', input: null },
          {
            type: 'float_parsing',
            loc: ['body', 'idle_seconds'],
            msg: 'Input should be a valid number, unable to parse string as a number',
            input: 'abc',
          },
        ],
      }),
    );
  });

  it.each([
    ['5', { type: 'greater_than_equal', loc: ['body', 'idle_seconds'], msg: 'Input should be greater than or equal to 10', input: '5', ctx: { ge: 10 } }],
    ['3600.5', { type: 'less_than_equal', loc: ['body', 'idle_seconds'], msg: 'Input should be less than or equal to 3600', input: '3600.5', ctx: { le: 3600 } }],
  ])('refuses idle_seconds=%s out of bounds', async (value, error) => {
    const { token } = await app.register();
    const res = await open(token, { board: 'pico', idle_seconds: value });
    expect(res.status).toBe(422);
    expect(await res.text()).toBe(JSON.stringify({ detail: [error] }));
    expect(await boardStatus('pico')).toMatchObject({ status: 'free' });
  });

  it('refuses a board name over 64 characters with string_too_long', async () => {
    const { token } = await app.register();
    const long = 'b'.repeat(65);
    const res = await open(token, { board: long });
    expect(await res.json()).toEqual({
      detail: [{ type: 'string_too_long', loc: ['body', 'board'], msg: 'String should have at most 64 characters', input: long, ctx: { max_length: 64 } }],
    });
  });

  it('answers a missing body with one 422 per required field, as FastAPI answers a form endpoint', async () => {
    const { token } = await app.register();
    const res = await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(token) });
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({ detail: [{ type: 'missing', loc: ['body', 'board'], msg: 'Field required', input: null }] });
  });

  it('refuses a JSON body with 415', async () => {
    const { token } = await app.register();
    const res = await app.request('/api/v1/sessions', {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: JSON.stringify({ board: 'pico' }),
    });
    expect(res.status).toBe(415);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/application\/x-www-form-urlencoded or multipart\/form-data/);
  });

  it('accepts the same form as multipart/form-data', async () => {
    const { token } = await app.register();
    const body = new FormData();
    body.set('board', 'uno');
    const res = await app.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body });
    expect(res.status).toBe(200);
  });

  it('refuses a form body over the limit with 413', async () => {
    const { token } = await app.register();
    const res = await open(token, { board: 'pico', note: 'x'.repeat(70 * 1024) });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { detail: string }).detail).toBe('the request body is larger than the limit of 65536 bytes (64 KiB)');
  });

  it('answers 404 for an unknown board and 503 for an offline one', async () => {
    const { token } = await app.register();
    const missing = await open(token, { board: 'nope' });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { detail: string }).detail).toMatch(/^board "nope" not found; boards here: .*pico/);

    await app.close();
    app = await startBenchTestApp({ backends: { mock: new MockBackend({ unavailable: { pico: 'USB hub unplugged' } }) } });
    const again = await app.register();
    const offline = await open(again.token, { board: 'pico' });
    expect(offline.status).toBe(503);
    expect(await offline.json()).toEqual({ detail: 'board pico is offline: USB hub unplugged' });
    expect(await boardStatus('pico')).toMatchObject({ status: 'offline' });
  });

  it('refuses a board held by another agent with who and until when, and Retry-After', async () => {
    const alice = await app.register('alice');
    const bob = await app.register('bob');
    expect((await open(alice.token, { board: 'pico', idle_seconds: '60' })).status).toBe(200);
    app.fake.tick(15_000);
    const res = await open(bob.token, { board: 'pico' });
    expect(res.status).toBe(409);
    expect(res.headers.get('retry-after')).toBe('45');
    expect(await res.json()).toEqual({
      detail: 'board pico is leased by agent "alice" until 2026-01-01T00:01:00.000Z unless renewed (retry_after_seconds=45)',
    });
  });

  it('allows one lease per board even for the same agent', async () => {
    const alice = await app.register('alice');
    expect((await open(alice.token, { board: 'pico' })).status).toBe(200);
    const res = await open(alice.token, { board: 'pico' });
    expect(res.status).toBe(409);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/already leased by you \(one lease per board\)/);
  });

  it('lets exactly one of many concurrent agents win a board', async () => {
    const agents = await Promise.all(Array.from({ length: 24 }, (_, i) => app.register(`racer-${i}`)));
    const results = await Promise.all(agents.map((a) => open(a.token, { board: 'uno' })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(agents.length - 1);
    const admin = await app.server.service.bench.admin();
    expect(admin.sessions.filter((s) => s.board === 'uno')).toHaveLength(1);
  });
});

describe('authentication', () => {
  it('answers a missing token with 401 and WWW-Authenticate: Bearer', async () => {
    const res = await app.request('/api/v1/sessions', { method: 'POST', body: form({ board: 'pico' }) });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(((await res.json()) as { detail: string }).detail).toMatch(/^Not authenticated/);
  });

  it.each([['Basic dXNlcjpwYXNz'], ['Bearer'], ['Bearer not-a-hilbench-token'], ['hb_abc']])('answers a malformed header %j with 401', async (header) => {
    const res = await app.request('/api/v1/sessions/ses_x', { headers: { authorization: header } });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ detail: 'Invalid authorization header: expected "Bearer hb_..."' });
  });

  it('answers an unknown token with 401', async () => {
    const res = await app.request('/api/v1/jobs/job_x', { headers: bearer(`hb_${'A'.repeat(43)}`) });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    expect(await res.json()).toEqual({ detail: 'Invalid token: no agent has this token' });
  });

  it("hides another agent's session as 404", async () => {
    const alice = await app.register('alice');
    const bob = await app.register('bob');
    const { session_id } = (await (await open(alice.token, { board: 'pico' })).json()) as { session_id: string };
    for (const [method, suffix] of [['GET', ''], ['POST', '/heartbeat'], ['POST', '/end']] as const) {
      const res = await app.request(`/api/v1/sessions/${session_id}${suffix}`, { method, headers: bearer(bob.token) });
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ detail: `session ${session_id} not found` });
    }
    expect(await boardStatus('pico')).toMatchObject({ status: 'leased' });
  });
});

describe('session life cycle', () => {
  it('heartbeats extend the lease; end frees the board; a second end names the state', async () => {
    const { token } = await app.register();
    const { session_id } = (await (await open(token, { board: 'pico', idle_seconds: '30' })).json()) as { session_id: string };
    app.fake.tick(20_000);
    const hb = await app.request(`/api/v1/sessions/${session_id}/heartbeat`, { method: 'POST', headers: bearer(token) });
    expect(await hb.json()).toMatchObject({
      state: 'active',
      last_heartbeat_at: '2026-01-01T00:00:20.000Z',
      expires_at: '2026-01-01T00:00:50.000Z',
    });
    app.fake.tick(29_000);
    expect(await boardStatus('pico')).toMatchObject({ status: 'leased' });
    const end = await app.request(`/api/v1/sessions/${session_id}/end`, { method: 'POST', headers: bearer(token) });
    expect(await end.json()).toMatchObject({ state: 'ended', ended_at: '2026-01-01T00:00:49.000Z' });
    expect(await boardStatus('pico')).toMatchObject({ status: 'free', lease_expires_at: null });

    const again = await app.request(`/api/v1/sessions/${session_id}/end`, { method: 'POST', headers: bearer(token) });
    expect(again.status).toBe(409);
    expect(await again.json()).toEqual({ detail: `cannot end session ${session_id}: it is ended at 2026-01-01T00:00:49.000Z, not active` });
    const hb2 = await app.request(`/api/v1/sessions/${session_id}/heartbeat`, { method: 'POST', headers: bearer(token) });
    expect(hb2.status).toBe(409);
    expect(((await hb2.json()) as { detail: string }).detail).toMatch(/cannot heartbeat session .*: it is ended/);
  });

  it('frees the board when heartbeats stop, with no request arriving (timer on the injected clock)', async () => {
    const alice = await app.register('alice');
    const { session_id } = (await (await open(alice.token, { board: 'pico' })).json()) as { session_id: string };
    app.fake.tick(89_999);
    await app.server.service.bench.idle();
    expect((await app.server.service.bench.admin()).sessions).toHaveLength(1);
    app.fake.tick(1);
    // Read the store directly, not through a request, to prove the timer did the work.
    await new Promise((r) => setImmediate(r));
    const leases = await app.server.service.store.listLeases(Date.UTC(2026, 0, 1) - 1);
    expect(leases).toEqual([]);
    expect(app.logger.lines).toContain(`info: session ${session_id} on pico expired; the board is free`);

    const got = await app.request(`/api/v1/sessions/${session_id}`, { headers: bearer(alice.token) });
    expect(await got.json()).toMatchObject({ state: 'expired', ended_at: '2026-01-01T00:01:30.000Z' });
    const bob = await app.register('bob');
    expect((await open(bob.token, { board: 'pico' })).status).toBe(200);
    const hb = await app.request(`/api/v1/sessions/${session_id}/heartbeat`, { method: 'POST', headers: bearer(alice.token) });
    expect(hb.status).toBe(409);
    expect(((await hb.json()) as { detail: string }).detail).toMatch(/it is expired at 2026-01-01T00:01:30.000Z, not active/);
  });

  it('keeps agents, tokens, sessions and leases across a restart, and expires what ran out while down', async () => {
    const alice = await app.register('alice');
    const short = (await (await open(alice.token, { board: 'pico', idle_seconds: '10' })).json()) as { session_id: string };
    const long = (await (await open(alice.token, { board: 'uno', idle_seconds: '600' })).json()) as { session_id: string };
    app = await app.restart();
    app.fake.tick(11_000);
    await new Promise((r) => setImmediate(r));

    const s1 = await app.request(`/api/v1/sessions/${short.session_id}`, { headers: bearer(alice.token) });
    expect(s1.status).toBe(200);
    expect(await s1.json()).toMatchObject({ state: 'expired' });
    const s2 = await app.request(`/api/v1/sessions/${long.session_id}`, { headers: bearer(alice.token) });
    expect(await s2.json()).toMatchObject({ state: 'active', expires_at: '2026-01-01T00:10:00.000Z' });
    expect(await boardStatus('uno')).toMatchObject({ status: 'leased' });
    expect(await boardStatus('pico')).toMatchObject({ status: 'free' });

    // The lease timer is re-armed on start: the board frees itself after the restart too.
    app.fake.tick(600_000);
    await new Promise((r) => setImmediate(r));
    expect(await app.server.service.store.listLeases(0)).toEqual([]);
  });
});
