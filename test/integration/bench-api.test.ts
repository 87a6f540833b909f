import Database from 'better-sqlite3';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Board } from '../../boards/board-schema.js';
import type { Backend } from '../../backends/backend.js';
import { MockBackend } from '../../backends/mock/mock-backend.js';
import { PAGES_ROUTES } from '../../server/bench/pages/pages-router.js';
import { CONSOLE_ROUTES } from '../../server/bench/pages/console-router.js';
import { expressPath } from '../../server/http/api-route.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { makeElf } from '../support/make-elf.js';
import { rawExchange as exchange } from '../support/raw-exchange.js';

/** Health, boards, stats, agents, admin, errors and the OpenAPI document, over real HTTP. */

let app: BenchTestApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});
async function start(overrides: Parameters<typeof startBenchTestApp>[0] = {}) {
  app = await startBenchTestApp(overrides);
  return app;
}
const picoElf = () => makeElf({ segments: [{ paddr: 0x10000000, data: new Uint8Array(16) }] });

describe('GET /api/v1/health', () => {
  it('is ok with the interface version, uptime on the injected clock and board counts', async () => {
    const a = await start();
    a.fake.tick(5_500);
    const res = await a.request('/api/v1/health');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', version: '0.3.4', uptime_seconds: 5.5, boards: { online: 12, offline: 0 }, database: 'ok', storage: 'ok' });
  });

  it('is degraded when no board can run', async () => {
    const a = await start({ backend: 'qemu' });
    expect(await (await a.request('/api/v1/health')).json()).toMatchObject({ status: 'degraded', boards: { online: 0, offline: 12 } });
  });
});

describe('a request asking to switch to HTTP/2 (Upgrade: h2c, as curl --http2 sends)', () => {
  const h2c = 'Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n';

  it('is served as HTTP/1.1, body included (it was a 404 on every route: the debug WebSockets took every Upgrade)', async () => {
    const a = await start();
    expect(await exchange(a.url, `GET /api/v1/health HTTP/1.1\r\nHost: bench\r\n${h2c}\r\n`)).toMatchObject({ status: 200, body: { status: 'ok' } });
    const registered = await exchange(a.url, `POST /api/v1/agents/register HTTP/1.1\r\nHost: bench\r\n${h2c}Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 11\r\n\r\nlabel=alice`);
    expect(registered).toMatchObject({ status: 200, body: { label: 'alice', token: expect.stringMatching(/^hb_/) } });
  });
});

describe('GET /api/v1/boards', () => {
  it('lists every board with MCU, backend, status and memory map', async () => {
    const a = await start();
    const body = (await (await a.request('/api/v1/boards')).json()) as { boards: Array<Record<string, unknown>> };
    expect(body.boards).toHaveLength(12);
    expect(body.boards.find((b) => b.id === 'uno')).toEqual({
      id: 'uno',
      name: 'Arduino Uno',
      description: 'ATmega328P at 16 MHz; runs in the pure-TypeScript simulator (avr8js).',
      mcu: {
        id: 'atmega328p',
        name: 'ATmega328P',
        architecture: 'avr',
        core: 'avr5',
        clock_hz: 16000000,
        memory: [
          { name: 'flash', kind: 'flash', start: 0, size_bytes: 32768 },
          { name: 'sram', kind: 'ram', start: 0x800100, size_bytes: 2048 },
          { name: 'eeprom', kind: 'eeprom', start: 0x810000, size_bytes: 1024 },
        ],
      },
      backend: 'mock',
      status: 'free',
      offline_reason: null,
      lease_expires_at: null,
      queued_jobs: 0,
    });
  });

  it('with --backend auto picks the first available listed backend and never substitutes the mock', async () => {
    const sim: Backend = {
      name: 'sim',
      availability: async (board: Board) => (board.id === 'pico' ? { available: true } : { available: false, reason: `no engine for ${board.id}` }),
      open: () => Promise.reject(new Error('not used')),
    };
    const a = await start({ backend: 'auto', backends: { sim, mock: new MockBackend() } });
    const boards = ((await (await a.request('/api/v1/boards')).json()) as { boards: Array<{ id: string; backend: string; status: string; offline_reason: string | null }> }).boards;
    expect(boards.find((b) => b.id === 'pico')).toMatchObject({ backend: 'sim', status: 'free', offline_reason: null });
    expect(boards.find((b) => b.id === 'uno')).toMatchObject({ backend: 'none', status: 'offline', offline_reason: 'no backend can run uno here (sim: no engine for uno)' });
    expect(boards.find((b) => b.id === 'mps2-an385')).toMatchObject({
      status: 'offline',
      offline_reason: expect.stringMatching(/qemu: the qemu backend is not configured here/),
    });
  });
});

describe('POST /api/v1/agents/register', () => {
  it('registers with the default label, shows the token once and stores only its hash', async () => {
    const a = await start();
    const res = await a.request('/api/v1/agents/register', { method: 'POST' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { agent_id: string; label: string; token: string; created_at: string };
    expect(body).toEqual({
      agent_id: expect.stringMatching(/^ag_[A-Za-z0-9_-]{22}$/),
      label: 'agent',
      token: expect.stringMatching(/^hb_[A-Za-z0-9_-]{43}$/),
      created_at: '2026-01-01T00:00:00.000Z',
    });
    const db = new Database(path.join(a.dataDir, 'bench.sqlite'), { readonly: true });
    const dump = JSON.stringify(db.prepare('SELECT * FROM agents').all());
    db.close();
    expect(dump).not.toContain(body.token);
    expect(dump).toContain(body.agent_id);
  });

  it('treats an empty label as absent, as FastAPI treats empty form values', async () => {
    const a = await start();
    const res = await a.request('/api/v1/agents/register', { method: 'POST', body: new URLSearchParams({ label: '' }) });
    expect(await res.json()).toMatchObject({ label: 'agent' });
  });

  it('refuses labels over 64 characters or with control characters', async () => {
    const a = await start();
    const long = 'x'.repeat(65);
    const tooLong = await a.request('/api/v1/agents/register', { method: 'POST', body: new URLSearchParams({ label: long }) });
    expect(tooLong.status).toBe(422);
    expect(await tooLong.json()).toEqual({
      detail: [{ type: 'string_too_long', loc: ['body', 'label'], msg: 'String should have at most 64 characters', input: long, ctx: { max_length: 64 } }],
    });
    const control = await a.request('/api/v1/agents/register', { method: 'POST', body: new URLSearchParams({ label: 'bell\u0007' }) });
    const detail = ((await control.json()) as { detail: Array<Record<string, unknown>> }).detail;
    expect(detail).toEqual([
      {
        type: 'string_pattern_mismatch',
        loc: ['body', 'label'],
        msg: "String should match pattern '^[^\\x00-\\x1f\\x7f-\\x9f]*$'",
        input: 'bell\u0007',
        ctx: { pattern: '^[^\\x00-\\x1f\\x7f-\\x9f]*$' },
      },
    ]);
  });

  it('refuses C1 controls (e.g. CSI) too, and accepts other Unicode', async () => {
    const a = await start();
    const csi = await a.request('/api/v1/agents/register', { method: 'POST', body: new URLSearchParams({ label: 'x\u009b31m' }) });
    expect(csi.status).toBe(422);
    const ok = await a.request('/api/v1/agents/register', { method: 'POST', body: new URLSearchParams({ label: 'Åsa’s ロボット' }) });
    expect(await ok.json()).toMatchObject({ label: 'Åsa’s ロボット' });
  });

  it('honours a configured label limit', async () => {
    const a = await start({ limits: { maxLabelLength: 8 } });
    const res = await a.request('/api/v1/agents/register', { method: 'POST', body: new URLSearchParams({ label: 'ninechars' }) });
    expect(((await res.json()) as { detail: Array<{ ctx: unknown }> }).detail[0]!.ctx).toEqual({ max_length: 8 });
  });
});

describe('GET /api/v1/stats', () => {
  it('reports totals, board leases by label and recent activity', async () => {
    const a = await start();
    const alice = await a.register('alice');
    const body = new FormData();
    body.set('board', 'pico');
    body.set('firmware', new Blob([picoElf()]), 'fw.elf');
    await a.request('/api/v1/jobs/flash', { method: 'POST', headers: { authorization: `Bearer ${alice.token}` }, body });
    await a.idle();
    await a.request('/api/v1/sessions', { method: 'POST', headers: { authorization: `Bearer ${alice.token}` }, body: new URLSearchParams({ board: 'uno' }) });
    const stats = (await (await a.request('/api/v1/stats')).json()) as {
      totals: unknown;
      boards: Array<{ id: string; leased_by: string | null; status: string }>;
      recent_activity: Array<Record<string, unknown>>;
    };
    expect(stats.totals).toEqual({ agents: 1, sessions_open: 1, jobs_total: 1, jobs_by_state: { queued: 0, flashing: 0, running: 0, done: 1, failed: 0 }, waitlist: 0 });
    expect(stats.boards.find((b) => b.id === 'uno')).toMatchObject({ status: 'leased', leased_by: 'alice' });
    expect(stats.recent_activity).toEqual([{ job_id: expect.stringMatching(/^job_.{8}$/), board: 'pico', agent_label: 'alice', state: 'done', at: '2026-01-01T00:00:00.000Z' }]);
    expect(JSON.stringify(stats)).not.toContain(alice.token);
  });
});

describe('GET /admin', () => {
  it('is disabled (403) without a configured token', async () => {
    const a = await start();
    const res = await a.request('/admin', { headers: { 'x-admin-token': 'anything' } });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ detail: 'admin is disabled: start the server with --admin-token or HILBENCH_ADMIN_TOKEN' });
  });

  it('refuses a missing or wrong token with 401 and shows leases, sessions and failures to the right one', async () => {
    const a = await start({ adminToken: 's3cret-admin' });
    expect((await a.request('/admin')).status).toBe(401);
    expect((await a.request('/admin', { headers: { 'x-admin-token': 's3cret-admin!' } })).status).toBe(401);
    expect(await (await a.request('/admin', { headers: { 'x-admin-token': 'wrong' } })).json()).toEqual({ detail: 'wrong admin token' });

    const alice = await a.register('alice');
    const sid = ((await (
      await a.request('/api/v1/sessions', { method: 'POST', headers: { authorization: `Bearer ${alice.token}` }, body: new URLSearchParams({ board: 'pico' }) })
    ).json()) as { session_id: string }).session_id;
    const body = new FormData();
    body.set('board', 'pico');
    body.set('session', sid);
    body.set('firmware', new Blob([makeElf({ segments: [{ paddr: 0x10000000, data: new Uint8Array(8) }], sections: [{ name: '.hilbench.mock', data: new TextEncoder().encode('fault=flash-fail') }] })]), 'f.elf');
    await a.request('/api/v1/jobs/flash', { method: 'POST', headers: { authorization: `Bearer ${alice.token}` }, body });
    await a.idle();

    const res = await a.request('/admin', { headers: { 'x-admin-token': 's3cret-admin' } });
    expect(res.status).toBe(200);
    const admin = (await res.json()) as {
      boards: Array<{ id: string; lease: Record<string, unknown> | null }>;
      sessions: Array<Record<string, unknown>>;
      recent_failures: Array<Record<string, unknown>>;
      counts: Record<string, unknown>;
    };
    expect(admin.boards.find((b) => b.id === 'pico')!.lease).toEqual({
      holder_kind: 'session',
      session_id: sid,
      job_id: null,
      agent_id: alice.agentId,
      agent_label: 'alice',
      expires_at: '2026-01-01T00:01:30.000Z',
    });
    expect(admin.sessions).toEqual([
      { session_id: sid, agent_id: alice.agentId, agent_label: 'alice', board: 'pico', idle_seconds: 90, created_at: '2026-01-01T00:00:00.000Z', expires_at: '2026-01-01T00:01:30.000Z', last_heartbeat_at: null },
    ]);
    expect(admin.recent_failures).toHaveLength(1);
    expect(admin.recent_failures[0]).toMatchObject({ agent_label: 'alice', failure: { kind: 'flash-failed' } });
    expect(admin.counts).toMatchObject({ agents: 1, sessions_open: 1, jobs_total: 1 });
  });
});

describe('errors', () => {
  it("answers unknown paths with FastAPI's 404", async () => {
    const a = await start();
    const res = await a.request('/api/v2/nothing');
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: 'Not Found' });
  });

  it.each([
    ['GET', '/api/v1/sessions', 'POST'],
    ['POST', '/api/v1/health', 'GET, HEAD'],
    ['DELETE', '/api/v1/jobs/job_1', 'GET, HEAD'],
    ['GET', '/api/v1/sessions/ses_1/heartbeat', 'POST'],
    ['PUT', '/admin', 'GET, HEAD'],
    ['POST', '/', 'GET, HEAD'],
  ])('answers %s %s with 405 and Allow: %s', async (method, p, allow) => {
    const a = await start();
    const res = await a.request(p, { method });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe(allow);
    expect(await res.json()).toEqual({ detail: 'Method Not Allowed' });
  });

  it('answers an unexpected failure with a generic 500 and logs the cause, never the stack', async () => {
    const a = await start({
      checkImage: () => {
        throw new Error('disk on fire at /secret/path');
      },
    });
    const { token } = await a.register();
    const body = new FormData();
    body.set('board', 'pico');
    body.set('firmware', new Blob([picoElf()]), 'fw.elf');
    const res = await a.request('/api/v1/jobs/flash', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body });
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(text).toBe('{"detail":"Internal Server Error"}');
    expect(a.logger.lines).toContain('error: POST /api/v1/jobs/flash failed with an unexpected error');
    expect(String(a.logger.causes.at(-1))).toMatch(/disk on fire/);
  });
});

describe('GET /openapi.json', () => {
  it('documents exactly the routes the app serves, with FastAPI-named components and security schemes', async () => {
    const a = await start();
    const doc = (await (await a.request('/openapi.json')).json()) as {
      openapi: string;
      info: { version: string };
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { properties: Record<string, unknown>; required?: string[] } }> }; responses: Record<string, unknown> }>>;
      components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('0.3.4');

    const documented = Object.entries(doc.paths)
      .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${expressPath(p)}`))
      .sort();
    // What express really routes (its router stack), minus the pages router and the document itself.
    const stack = (a.server.service.app as unknown as { router: { stack: Array<{ route?: { path: string; methods: Record<string, boolean> } }> } }).router.stack;
    const served = stack
      // The 405 catch-alls (`app.all`) list every method; a served route lists its own.
      .filter((layer) => layer.route && Object.keys(layer.route.methods).length === 1)
      .flatMap((layer) => Object.keys(layer.route!.methods).map((m) => `${m.toUpperCase()} ${layer.route!.path}`))
      .filter((r) => r !== 'GET /openapi.json')
      .sort();
    const pages = [...PAGES_ROUTES, ...CONSOLE_ROUTES].map((r) => `${r.method} ${r.path}`);
    expect([...served, ...pages].sort()).toEqual(documented);
    expect(documented.filter((r) => !pages.includes(r))).toEqual(
      [
        'GET /api/v1/health',
        'GET /api/v1/boards',
        'GET /api/v1/stats',
        'GET /metrics',
        'GET /api/v1/jobs/:job_id/uart',
        'POST /api/v1/jobs/:job_id/uart',
        'POST /api/v1/jobs/:job_id/cancel',
        'GET /api/v1/boards/:board/queue',
        'POST /api/v1/agents/register',
        'POST /api/v1/sessions',
        'GET /api/v1/sessions/:sid',
        'POST /api/v1/sessions/:sid/heartbeat',
        'POST /api/v1/sessions/:sid/end',
        'POST /api/v1/jobs/flash',
        'GET /api/v1/jobs/:job_id',
        'GET /admin',
        'POST /admin/boards/:board/release',
        'POST /admin/boards/:board/health-check',
        'POST /api/v1/worker/announce',
        'POST /api/v1/worker/heartbeat',
        'POST /api/v1/worker/claim',
        'GET /api/v1/worker/jobs/:job_id/firmware',
        'POST /api/v1/worker/jobs/:job_id/running',
        'POST /api/v1/worker/jobs/:job_id/heartbeat',
        'POST /api/v1/worker/jobs/:job_id/uart',
        'POST /api/v1/worker/jobs/:job_id/input',
        'POST /api/v1/worker/jobs/:job_id/finish',
        'GET /api/v1/worker/boards/:board/health',
        'POST /api/v1/worker/boards/:board/health',
        'POST /api/v1/worker/health-checks/:check_id',
        'POST /admin/workers',
        'GET /admin/workers',
        'POST /admin/workers/:worker_id/revoke',
        'POST /api/v1/sessions/:sid/debug',
        'GET /api/v1/jobs/:job_id/debug',
        'GET /api/v1/worker/jobs/:job_id/debug',
      ].sort(),
    );

    expect(doc.components.schemas).toHaveProperty('HTTPValidationError');
    expect(doc.components.schemas.ValidationError).toMatchObject({ title: 'ValidationError', required: ['loc', 'msg', 'type'] });
    expect(doc.components.securitySchemes).toEqual({
      HTTPBearer: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      AdminToken: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'x-admin-token' }),
      WorkerToken: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    });
    const flash = doc.paths['/api/v1/jobs/flash']!.post!;
    const form = flash.requestBody!.content['multipart/form-data']!.schema;
    expect(Object.keys(form.properties)).toEqual(['board', 'firmware', 'uart_seconds', 'session']);
    expect(form.required).toEqual(['board', 'firmware']);
    expect(form.properties.firmware).toMatchObject({ type: 'string', format: 'binary' });
    expect(form.properties.uart_seconds).toMatchObject({ type: 'string', default: '0.8' });
    expect(Object.keys(flash.responses)).toEqual(['200', '400', '401', '404', '409', '413', '415', '422', '429', '500', '503']);
    expect(doc.paths['/api/v1/sessions']!.post!.requestBody!.content['application/x-www-form-urlencoded']!.schema.properties.idle_seconds).toMatchObject({ default: '90' });
    // The 409 a queued caller gets when its wait_seconds run out is one an agent should expect from the document.
    expect((doc.paths['/api/v1/sessions']!.post!.responses['409'] as { description: string }).description).toMatch(/wait_seconds.*place in the queue/);
    expect(doc.paths['/api/v1/jobs/{job_id}']!.get!.responses['200']).toEqual({
      description: 'Successful Response',
      // The whole job, or with ?uart=text / ?max_chars= its UART as text (decision 0537).
      content: { 'application/json': { schema: { anyOf: [{ $ref: '#/components/schemas/Job' }, { $ref: '#/components/schemas/JobText' }] } } },
    });
  });
});

describe('pages', () => {
  it('are mounted beside the API', async () => {
    const a = await start();
    const home = await a.request('/');
    expect(home.status).toBe(200);
    expect(home.headers.get('content-type')).toMatch(/^text\/html/);
    expect((await a.request('/llms.txt')).status).toBe(200);
  });
});
