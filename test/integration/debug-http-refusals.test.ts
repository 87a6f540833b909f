import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { rawExchange } from '../support/raw-exchange.js';

/**
 * The debug extension's HTTP refusals (issue 32, docs/debug.md): POST /api/v1/sessions/{sid}/debug
 * refuses what is not the caller's or not active in the arming's own words; a debug stream's upgrade
 * that is refused (not `Upgrade: tcp`, not a GET, a bad token on either leg) is answered as every
 * refusal is, `{"detail"}` in JSON, before anything switches.
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

  it('refuses a bad body with 422 naming the field; the session can be armed after it', async () => {
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

describe("a debug stream's upgrade refused before it switches", () => {
  const cases = [
    ['a WebSocket upgrade of the agent path', 'GET /api/v1/jobs/job_x/debug HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n', 426, 'upgrade: tcp'],
    ['a WebSocket upgrade of the worker path', 'GET /api/v1/worker/jobs/job_x/debug HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n', 426, 'upgrade: tcp'],
    ['a POST', 'POST /api/v1/jobs/job_x/debug HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: 0\r\n\r\n', 405, 'allow: get'],
    ["an agent's upgrade with a token no agent has", 'GET /api/v1/jobs/job_x/debug HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nAuthorization: Bearer hb_nobody\r\n\r\n', 401, 'www-authenticate: bearer error="invalid_token"'],
    ["a worker's leg with a token no worker has", 'GET /api/v1/worker/jobs/job_x/debug HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nAuthorization: Bearer hbw_nobody\r\n\r\n', 401, 'content-type: application/json'],
  ] as const;
  for (const [what, request, status, header] of cases) {
    it(`answers ${what} with ${status} in JSON`, async () => {
      const a = (app = await startBenchTestApp());
      const answer = await rawExchange(a.url, request);
      expect(answer.status).toBe(status);
      expect(answer.head).toContain('content-type: application/json');
      expect(answer.head).toContain(header);
      expect(answer.body).toEqual({ detail: expect.any(String) });
    });
  }
});

describe('a refused debug upgrade whose client never closes its side', () => {
  it('does not keep the bench from closing: the bench closes the refused connection', async () => {
    const a = await startBenchTestApp();
    const { hostname, port } = new URL(a.url);
    const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true });
    socket.on('error', () => undefined);
    const answered = new Promise<string>((resolve) => {
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
      socket.once('end', () => resolve(received));
    });
    socket.write('GET /api/v1/jobs/job_x/debug HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n');
    expect((await answered).slice(0, 12)).toBe('HTTP/1.1 401');
    // Without the refused connection closed by the bench, this waits for ever (the test's timeout).
    await a.close();
    socket.destroy();
  });
});
