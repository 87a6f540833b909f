import { createHash } from 'node:crypto';
import { createClock } from '@sinonjs/fake-timers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { memoryLogger } from '../../server/http/logger.js';
import { type RunningRelay, startRelayServer, tempDataDir } from '../support/relay-test-kit.js';

/**
 * Issue 9: every answer of both services says `X-Content-Type-Options: nosniff` (JSON that echoes
 * input is never sniffed into HTML), errors included; the relay's human site sends the headers the
 * bench pages send: a Content-Security-Policy, no framing, no referrer.
 */
describe('bench service', () => {
  let app: BenchTestApp;
  beforeAll(async () => {
    app = await startBenchTestApp();
  });
  afterAll(() => app.close());

  it.each([
    ['GET', '/api/v1/health', undefined, 200],
    ['GET', '/api/v1/boards', undefined, 200],
    ['POST', '/api/v1/agents/register', new URLSearchParams({ label: 'x' }), 200],
    ['GET', '/api/v1/sessions/nope', undefined, 401],
    ['POST', '/api/v1/agents/register', new URLSearchParams({ label: 'x'.repeat(500) }), 422],
    ['GET', '/no/such/path', undefined, 404],
    ['PUT', '/api/v1/health', undefined, 405],
    ['GET', '/openapi.json', undefined, 200],
    ['GET', '/', undefined, 200],
  ] as const)('%s %s (%s) answers %i with nosniff', async (method, path, body, status) => {
    const res = await app.request(path, { method, ...(body ? { body } : {}) });
    expect(res.status).toBe(status);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });
});

describe('relay service', () => {
  const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
  const data = tempDataDir();
  let relay: RunningRelay;
  beforeAll(async () => {
    relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), basePath: '/api' });
  });
  afterAll(async () => {
    await relay.close();
    data.remove();
  });

  it.each([
    ['GET', '/api/health', undefined, 200],
    ['GET', '/api/nodes', undefined, 200],
    ['GET', '/api/me', undefined, 401],
    ['POST', '/api/register', '{}', 422],
    ['POST', '/api/register', '{not json', 422],
    ['GET', '/api/nodes/xyz', undefined, 422],
    ['GET', '/api/no-such-path', undefined, 404],
    ['GET', '/api/openapi.json', undefined, 200],
  ] as const)('%s %s (%s) answers %i with nosniff', async (method, path, body, status) => {
    const res = await fetch(`${relay.url}${path}`, { method, ...(body ? { body, headers: { 'content-type': 'application/json' } } : {}) });
    expect(res.status).toBe(status);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it.each(['/', '/agents'])('the site page %s has a CSP that allows exactly its own style sheet, and no framing, referrer or sniffing', async (path) => {
    const res = await fetch(`${relay.url}${path}`);
    expect(res.status).toBe(200);
    const html = await res.text();
    const style = /<style>([^<]*)<\/style>/.exec(html)![1]!;
    const policy = res.headers.get('content-security-policy') ?? '';
    const directives = new Map(policy.split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...sources]) => [name!, sources]));
    // What a browser computes before it applies the style element: the hash of its text.
    expect(directives.get('style-src')).toEqual([`'sha256-${createHash('sha256').update(style).digest('base64')}'`]);
    expect(directives.get('default-src')).toEqual(["'none'"]);
    expect(directives.get('frame-ancestors')).toEqual(["'none'"]);
    expect(directives.get('base-uri')).toEqual(["'none'"]);
    expect(html).not.toMatch(/<script/i);
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it.each(['/AGENTS.md', '/llms.txt'])('the site document %s carries the same headers', async (path) => {
    const res = await fetch(`${relay.url}${path}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
