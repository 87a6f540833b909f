import { createClock } from '@sinonjs/fake-timers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { type RunningRelay, startRelayServer, tempDataDir } from '../support/relay-test-kit.js';

/**
 * Both services match paths as Starlette does: case-sensitively and strictly, and a path that only
 * matches with its trailing slash removed (or one added) is answered 307 to that path, query kept,
 * when that path is served for the request's method; otherwise 404 as before. Express matched
 * `/API/v1/health`, `/agents.md` and `/api/v1/health/` as if they were the routes.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 28, 12)));
const data = tempDataDir();
const rootData = tempDataDir();
let bench: BenchTestApp;
let relay: RunningRelay;
let rootRelay: RunningRelay;

beforeAll(async () => {
  bench = await startBenchTestApp();
  relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), basePath: '/api' });
  rootRelay = await startRelayServer({ clock, dataDir: rootData.dir, logger: memoryLogger() });
});
afterAll(async () => {
  await bench.close();
  await relay.close();
  await rootRelay.close();
  data.remove();
  rootData.remove();
});

const send = (origin: string, path: string, method = 'GET') => fetch(`${origin}${path}`, { method, redirect: 'manual' });

async function expectNotFound(res: Response): Promise<void> {
  expect(res.status).toBe(404);
  expect(await res.json()).toEqual({ detail: 'Not Found' });
}

describe('paths match case-sensitively', () => {
  it.each([
    ['bench', '/API/v1/health', () => bench.url],
    ['bench', '/api/v1/Health', () => bench.url],
    ['bench', '/LLMS.txt', () => bench.url],
    ['bench', '/Console/sign-in', () => bench.url],
    ['relay under /api', '/API/health', () => relay.url],
    ['relay under /api', '/api/Health', () => relay.url],
    ['relay under /api', '/agents.md', () => relay.url],
    ['relay at the root', '/HEALTH', () => rootRelay.url],
    ['relay at the root', '/Agents', () => rootRelay.url],
  ])('%s: GET %s is 404 {"detail":"Not Found"}', async (_service, path, origin) => {
    await expectNotFound(await send(origin(), path));
  });

  it.each([
    ['bench', '/api/v1/health', () => bench.url],
    ['bench', '/llms.txt', () => bench.url],
    ['bench', '/robots.txt', () => bench.url],
    ['bench', '/.well-known/ai-plugin.json', () => bench.url],
    ['bench', '/logo.png', () => bench.url],
    ['bench', '/', () => bench.url],
    ['relay under /api', '/api/health', () => relay.url],
    ['relay under /api', '/AGENTS.md', () => relay.url],
    ['relay under /api', '/llms.txt', () => relay.url],
    ['relay under /api', '/', () => relay.url],
    ['relay at the root', '/openapi.json', () => rootRelay.url],
  ])('%s: GET %s, spelled as documented, still answers 200', async (_service, path, origin) => {
    expect((await send(origin(), path)).status).toBe(200);
  });
});

describe('a trailing slash is redirected like Starlette redirect_slashes', () => {
  it.each([
    ['bench', '/api/v1/health/', '/api/v1/health', () => bench.url],
    ['bench', '/api/v1/jobs/j-1/?wait=5&x=%2F', '/api/v1/jobs/j-1?wait=5&x=%2F', () => bench.url],
    ['bench', '/stats/', '/stats', () => bench.url],
    ['bench', '/api/v1/health//', '/api/v1/health', () => bench.url],
    ['relay under /api', '/api/health/', '/api/health', () => relay.url],
    ['relay under /api', '/api/events/?after=0', '/api/events?after=0', () => relay.url],
    ['relay under /api', '/agents/', '/agents', () => relay.url],
    ['relay at the root', '/items/abc/', '/items/abc', () => rootRelay.url],
  ])('%s: GET %s is 307 to %s with an empty body', async (_service, path, location, origin) => {
    const res = await send(origin(), path);
    expect(res.status).toBe(307);
    expect(res.headers.get('location')).toBe(location);
    expect(await res.text()).toBe('');
  });

  it('keeps the method: a POST route with a slash added is 307 for POST', async () => {
    const res = await send(bench.url, '/api/v1/agents/register/', 'POST');
    expect(res.status).toBe(307);
    expect(res.headers.get('location')).toBe('/api/v1/agents/register');
    const relayRes = await send(relay.url, '/api/register/', 'POST');
    expect(relayRes.status).toBe(307);
    expect(relayRes.headers.get('location')).toBe('/api/register');
  });

  it('HEAD follows its GET route', async () => {
    const res = await send(bench.url, '/api/v1/health/', 'HEAD');
    expect(res.status).toBe(307);
    expect(res.headers.get('location')).toBe('/api/v1/health');
  });

  it.each([
    ['bench', 'POST', '/api/v1/health/', () => bench.url],
    ['bench', 'GET', '/api/v1/nothing/', () => bench.url],
    ['bench', 'GET', '/API/v1/health/', () => bench.url],
    ['relay under /api', 'POST', '/api/health/', () => relay.url],
    ['relay under /api', 'GET', '/health/', () => relay.url],
    ['relay at the root', 'GET', '/items/a/b/', () => rootRelay.url],
  ])('%s: %s %s, whose other form is not served for that method, is 404 as before', async (_service, method, path, origin) => {
    await expectNotFound(await send(origin(), path, method));
  });

  it('never redirects off the host: "//" paths are 404', async () => {
    await expectNotFound(await send(bench.url, '//api/v1/health/'));
  });
});
