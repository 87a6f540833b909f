import { afterEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';

/**
 * POST /api/v1/sessions/{sid}/debug (issue 32, docs/debug.md) refuses what is not the caller's
 * or not active in the arming's own words, and arms nothing when it refuses.
 */
let app: BenchTestApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function openSession(a: BenchTestApp, token: string): Promise<string> {
  const res = await a.request('/api/v1/sessions', { method: 'POST', headers: bearer(token), body: new URLSearchParams({ board: 'pico' }) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { session_id: string }).session_id;
}

function arm(a: BenchTestApp, token: string, sid: string, body = '{}') {
  return a.request(`/api/v1/sessions/${sid}/debug`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body });
}

describe('arming a session for a debugger', () => {
  it("answers another agent's session as a missing one (404)", async () => {
    const a = (app = await startBenchTestApp());
    const alice = await a.register('alice');
    const bob = await a.register('bob');
    const sid = await openSession(a, alice.token);
    const res = await arm(a, bob.token, sid);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: `session ${sid} not found` });
  });

  it('refuses an ended session with 409 in the words of arming, not of a heartbeat', async () => {
    const a = (app = await startBenchTestApp());
    const alice = await a.register('alice');
    const sid = await openSession(a, alice.token);
    expect((await a.request(`/api/v1/sessions/${sid}/end`, { method: 'POST', headers: bearer(alice.token) })).status).toBe(200);
    const res = await arm(a, alice.token, sid);
    expect(res.status).toBe(409);
    const { detail } = (await res.json()) as { detail: string };
    expect(detail).toMatch(new RegExp(`^cannot arm a debugger on session ${sid}: it is ended.*, not active$`));
    expect(detail).not.toMatch(/heartbeat/);
  });

  it('refuses a bad body with 422 and arms nothing: a good arming after it answers its own terms', async () => {
    const a = (app = await startBenchTestApp());
    const alice = await a.register('alice');
    const sid = await openSession(a, alice.token);
    const bad = await arm(a, alice.token, sid, '{"idle_timeout_seconds": "soon"}');
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { detail: Array<{ loc: unknown[] }> }).detail[0]!.loc).toEqual(['body', 'idle_timeout_seconds']);
    const good = await arm(a, alice.token, sid);
    expect(good.status).toBe(200);
    expect(await good.json()).toMatchObject({ session_id: sid });
  });
});
