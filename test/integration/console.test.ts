import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { MockBackend } from '../../backends/mock/mock-backend.js';
import { systemClock } from '../../core/clock.js';
import { BenchClient } from '../../clients/bench/bench-client.js';
import { memoryLogger } from '../../server/http/logger.js';
import { type RunningBenchServer, startBenchServer } from '../../server/bench/start-bench-server.js';
import { makeElf } from '../support/make-elf.js';

/** The operator's console over HTTP: who gets in, what it shows, and what its forms refuse. */

const ADMIN = 'console-test-admin-token';
const catalog = loadBoardCatalog();
let server: RunningBenchServer;
let closed: RunningBenchServer;
const dirs: string[] = [];

async function start(adminToken?: string): Promise<RunningBenchServer> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hilbench-console-'));
  dirs.push(dataDir);
  return startBenchServer({ port: 0, dataDir, boards: catalog, clock: systemClock, logger: memoryLogger(), backends: { mock: new MockBackend() }, publicBaseUrl: 'http://127.0.0.1', ...(adminToken ? { adminToken } : {}) });
}

const picoElf = (fault?: string) =>
  makeElf({ segments: [{ paddr: 0x10000000, data: new Uint8Array(64) }], sections: fault ? [{ name: '.hilbench.mock', data: new TextEncoder().encode(`fault=${fault}`) }] : [] });

beforeAll(async () => {
  server = await start(ADMIN);
  closed = await start();
});
afterAll(async () => {
  await server.close();
  await closed.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const get = (url: string, cookie?: string) => fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
const post = (url: string, fields: Record<string, string>, cookie?: string) =>
  fetch(url, { method: 'POST', redirect: 'manual', body: new URLSearchParams(fields), headers: cookie ? { cookie } : {} });
const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)![1]!;

async function signIn(base: string, token = ADMIN): Promise<Response> {
  const csrf = csrfOf(await (await get(`${base}/console/sign-in`)).text());
  return post(`${base}/console/sign-in`, { token, csrf });
}

describe('the operator console', () => {
  it('lets nobody in without signing in: pages redirect, streams and forms refuse', async () => {
    const index = await get(`${server.url}/console`);
    expect(index.status).toBe(303);
    expect(index.headers.get('location')).toBe('/console/sign-in');
    expect((await get(`${server.url}/console/jobs/job_x/uart`)).status).toBe(401);
    expect((await post(`${server.url}/console/boards/pico/release`, { csrf: 'x' })).status).toBe(401);
    expect((await get(`${server.url}/console`, 'hb_console=99999999999999.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')).status).toBe(303);
  });

  it('signs in with the admin token only, through a CSRF-checked form, into an HttpOnly SameSite=Strict cookie', async () => {
    const wrong = await signIn(server.url, 'not-the-token');
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain('That is not the administrator token of this server.');
    expect((await post(`${server.url}/console/sign-in`, { token: ADMIN })).status).toBe(403);
    const ok = await signIn(server.url);
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toBe('/console');
    expect(ok.headers.get('set-cookie')).toMatch(/^hb_console=\d+\.[A-Za-z0-9_-]{43}; Path=\/console; HttpOnly; SameSite=Strict; Max-Age=43200$/);
  });

  it('shows every agent\'s jobs, a job with its firmware, timings, outcome and UART, and a board\'s pass rate', async () => {
    const cookie = (await signIn(server.url)).headers.get('set-cookie')!.split(';')[0]!;
    const anonymous = new BenchClient({ baseUrl: server.url });
    const alice = anonymous.withToken((await anonymous.register('alice')).token);
    const bob = anonymous.withToken((await anonymous.register('bob')).token);
    const done = await alice.flash('pico', picoElf(), { uartSeconds: 0.3 });
    const failed = await bob.flash('pico', picoElf('crash'), { uartSeconds: 0.3 });
    const index = await (await get(`${server.url}/console`, cookie)).text();
    expect(index).toContain(`/console/jobs/${done.job_id}`);
    expect(index).toContain(`/console/jobs/${failed.job_id}`);
    expect(index).toMatch(/<td>alice<\/td>[\s\S]*<td>bob<\/td>|<td>bob<\/td>[\s\S]*<td>alice<\/td>/);
    const jobPage = await (await get(`${server.url}/console/jobs/${done.job_id}`, cookie)).text();
    expect(jobPage).toContain(done.firmware.sha256);
    expect(jobPage).toContain('hilbench-mock: tick 3');
    expect(jobPage).toContain('agent alice');
    expect(jobPage).not.toContain('data-stream'); // finished: no live stream
    const board = await (await get(`${server.url}/console/boards/pico`, cookie)).text();
    expect(board).toMatch(/Pass rate: \d+ % of the last \d+ finished jobs done \(\d+ failed\)/);
    expect((await get(`${server.url}/console/jobs/job_nope`, cookie)).status).toBe(404);
    const stream = await get(`${server.url}/console/jobs/${done.job_id}/uart`, cookie);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(await stream.text()).toMatch(/event: uart[\s\S]*event: end/);
  });

  it('a release form needs its CSRF token; a board that keeps no health is a 409', async () => {
    const cookie = (await signIn(server.url)).headers.get('set-cookie')!.split(';')[0]!;
    expect((await post(`${server.url}/console/boards/pico/release`, {}, cookie)).status).toBe(403);
    const csrf = csrfOf(await (await get(`${server.url}/console`, cookie)).text());
    expect((await post(`${server.url}/console/boards/pico/release`, { csrf }, cookie)).status).toBe(409);
  });

  it('is closed on a server without an admin token', async () => {
    expect(await (await get(`${closed.url}/console/sign-in`)).text()).toContain('The console is closed');
    expect((await post(`${closed.url}/console/sign-in`, { token: 'anything', csrf: 'forged' })).status).toBe(403);
    expect((await get(`${closed.url}/console`)).status).toBe(303);
  });
});
