import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { defaultBenchLimits } from '../../server/bench/domain/bench-limits.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { memoryLogger } from '../../server/http/logger.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { type RunningRelay, type StartRelayServerOptions, defaultRelayRateLimits, startRelayServer } from '../../server/relay/relay-service.js';
import { call, registrationFor, tempDataDir } from '../support/relay-test-kit.js';

/**
 * Issue 9: unauthenticated writes (agent registration and the waitlist on the bench; registration,
 * sign-in and recovery on the relay) are limited per client address, on the injected clock, and
 * answered 429 with Retry-After. These tests run on the default limits.
 */
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The bench on its real default rate limits (the test harness raises them otherwise). */
async function benchOnDefaults(more: Parameters<typeof startBenchTestApp>[0] = {}): Promise<BenchTestApp> {
  const app = await startBenchTestApp({
    ...more,
    limits: { agentRegistrationsPerMinute: defaultBenchLimits.agentRegistrationsPerMinute, waitlistJoinsPerMinute: defaultBenchLimits.waitlistJoinsPerMinute },
  });
  cleanups.push(() => app.close());
  return app;
}

const register = (app: BenchTestApp, headers: Record<string, string> = {}) =>
  app.request('/api/v1/agents/register', { method: 'POST', headers, body: new URLSearchParams({ label: 'burst' }) });

describe('bench: POST /api/v1/agents/register', () => {
  it(`takes ${defaultBenchLimits.agentRegistrationsPerMinute} a minute from one address, then 429 with Retry-After until the clock moves on`, async () => {
    const app = await benchOnDefaults();
    expect(defaultBenchLimits.agentRegistrationsPerMinute).toBe(10);
    for (let i = 0; i < 10; i++) expect((await register(app)).status).toBe(200);
    const refused = await register(app);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('6');
    expect(refused.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await refused.json()).toEqual({ detail: 'too many agent registrations from your address: at most 10 per 60 s; retry after 6 s' });
    app.fake.tick(5_999);
    expect((await register(app)).status).toBe(429);
    app.fake.tick(1);
    expect((await register(app)).status).toBe(200);
    expect((await register(app)).status).toBe(429);
  });

  it('ignores X-Forwarded-For unless proxies are configured (anyone can write it)', async () => {
    const app = await benchOnDefaults();
    for (let i = 0; i < 10; i++) expect((await register(app, { 'x-forwarded-for': `198.51.100.${i}` })).status).toBe(200);
    expect((await register(app, { 'x-forwarded-for': '198.51.100.200' })).status).toBe(429);
  });

  it('with trustProxyHops 1, limits the address the proxy saw, not what the client wrote before it', async () => {
    const app = await benchOnDefaults({ trustProxyHops: 1 });
    for (let i = 0; i < 10; i++) expect((await register(app, { 'x-forwarded-for': `6.6.6.${i}, 198.51.100.7` })).status).toBe(200);
    expect((await register(app, { 'x-forwarded-for': '6.6.6.99, 198.51.100.7' })).status).toBe(429);
    expect((await register(app, { 'x-forwarded-for': '198.51.100.8' })).status).toBe(200);
  });
});

describe('bench: POST /api/v1/waitlist', () => {
  async function csrfOf(app: BenchTestApp): Promise<string> {
    const page = await (await app.request('/')).text();
    return /name="csrf" value="([^"]+)"/.exec(page)![1]!;
  }
  const join = (app: BenchTestApp, csrf: string, n: number, accept = 'application/json') =>
    app.request('/api/v1/waitlist', {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept },
      body: new URLSearchParams({ email: `person${n}@example.org`, csrf }),
    });

  it('one CSRF token no longer signs up an unbounded list: 5 a minute, then 429 JSON with Retry-After', async () => {
    const app = await benchOnDefaults();
    const csrf = await csrfOf(app);
    for (let n = 0; n < 5; n++) expect((await join(app, csrf, n)).status).toBe(200);
    const refused = await join(app, csrf, 5);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('12');
    expect(await refused.json()).toEqual({ detail: 'too many waitlist sign-ups from your address: at most 5 per 60 s; retry after 12 s' });
    expect(await app.server.service.getSnapshot()).toMatchObject({ totals: { waitlist: 5 } });
  });

  it('a browser form over the limit gets a readable page, still 429 with Retry-After', async () => {
    const app = await benchOnDefaults();
    const csrf = await csrfOf(app);
    for (let n = 0; n < 5; n++) expect((await join(app, csrf, n, 'text/html')).status).toBe(303);
    const refused = await join(app, csrf, 5, 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.8');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('12');
    expect(refused.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await refused.text()).toContain('too many waitlist sign-ups from your address');
  });
});

describe('relay: unauthenticated writes', () => {
  const fake = createClock(Date.UTC(2026, 10, 20, 12));
  const clock = clockFromFakeTimers(fake);

  /** The relay on its default rate limits (relay-service's own startRelayServer, not the test kit's). */
  async function relayOnDefaults(more: Partial<StartRelayServerOptions> = {}): Promise<RunningRelay> {
    const data = tempDataDir();
    const relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), ...more });
    cleanups.push(async () => {
      await relay.close();
      data.remove();
    });
    return relay;
  }
  const registerOne = (relay: RunningRelay) => call(relay.baseUrl, 'POST', '/register', { body: registrationFor(generateNodeKey(), relay.baseUrl, clock) });

  it(`POST /register: ${defaultRelayRateLimits.registrationsPerMinute} a minute from one address, then 429 with Retry-After`, async () => {
    const relay = await relayOnDefaults();
    for (let i = 0; i < defaultRelayRateLimits.registrationsPerMinute; i++) expect((await registerOne(relay)).status).toBe(201);
    const refused = await registerOne(relay);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('6');
    expect(refused.body).toEqual({ detail: 'too many registrations from your address: at most 10 per 60 s; retry after 6 s' });
    fake.tick(6_000);
    expect((await registerOne(relay)).status).toBe(201);
  });

  it('login, login/verify, session and recovery share one allowance per address, on top of the per-number code limits', async () => {
    const relay = await relayOnDefaults();
    let n = 0;
    const phone = () => `+41795550${String(n++).padStart(3, '0')}`;
    const requests = [
      () => call(relay.baseUrl, 'POST', '/login', { body: { phone: phone() } }),
      () => call(relay.baseUrl, 'POST', '/recover/start', { body: { phone: phone() } }),
      () => call(relay.baseUrl, 'POST', '/login/verify', { body: { phone: phone(), code: '000000' } }),
      () => call(relay.baseUrl, 'POST', '/recover/finish', { body: { phone: phone(), code: '000000' } }),
    ];
    const statuses: number[] = [];
    for (let i = 0; i < defaultRelayRateLimits.signInsPerMinute; i++) statuses.push((await requests[i % requests.length]!()).status);
    expect(statuses.filter((s) => s === 429)).toEqual([]);
    const refused = await call(relay.baseUrl, 'POST', '/session', { body: {} });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('3');
    expect(String(refused.body.detail)).toMatch(/^too many sign-in and recovery requests from your address: at most 20 per 60 s/);
    // The per-number limit is still its own answer: the second code for one number within a minute.
    fake.tick(60_000);
    expect((await call(relay.baseUrl, 'POST', '/login', { body: { phone: '+41795551234' } })).status).toBe(200);
    const again = await call(relay.baseUrl, 'POST', '/login', { body: { phone: '+41795551234' } });
    expect(again.status).toBe(429);
    expect(String(again.body.detail)).toContain('for this number');
  });

  it('authenticated and read routes are not limited', async () => {
    const relay = await relayOnDefaults({ rateLimits: { registrationsPerMinute: 1 } });
    const first = await registerOne(relay);
    expect(first.status).toBe(201);
    for (let i = 0; i < 30; i++) expect((await call(relay.baseUrl, 'GET', '/me', { auth: String(first.body.authorization) })).status).toBe(200);
    expect((await registerOne(relay)).status).toBe(429);
  });
});
