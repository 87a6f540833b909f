import { createClock } from '@sinonjs/fake-timers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { rawAnswer } from '../support/raw-exchange.js';
import { type RunningRelay, startRelayServer, tempDataDir } from '../support/relay-test-kit.js';

/**
 * An HTTP/1.1 request without `Host` is a 400 on both services, in their wire format: `{"detail":
 * ...}` with `Connection: close`. Node answered it itself, with an empty chunked body.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const data = tempDataDir();
let bench: BenchTestApp;
let relay: RunningRelay;

beforeAll(async () => {
  bench = await startBenchTestApp();
  relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger() });
});
afterAll(async () => {
  await bench.close();
  await relay.close();
  data.remove();
});

describe('a request without Host', () => {
  it.each([
    ['bench', () => bench.url, '/api/v1/health'],
    ['relay', () => relay.baseUrl, '/health'],
  ])('%s: 400 {"detail": ...} with Connection: close, nosniff', async (_service, origin, path) => {
    const answer = await rawAnswer(origin(), `GET ${path} HTTP/1.1\r\n\r\n`);
    const [head, body] = answer.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(head).toMatch(/\r\nConnection: close\r\n/i);
    expect(head).toMatch(/\r\nX-Content-Type-Options: nosniff\r\n/i);
    expect(body).toBe(JSON.stringify({ detail: 'Invalid HTTP request received.' }));
  });

  it.each([
    ['bench', () => bench.url, '/api/v1/health'],
    ['relay', () => relay.baseUrl, '/health'],
  ])('%s: two Host headers get the same 400 (node kept the first and answered)', async (_service, origin, path) => {
    const answer = await rawAnswer(origin(), `GET ${path} HTTP/1.1\r\nHost: a.example\r\nhost: b.example\r\nConnection: close\r\n\r\n`);
    const [head, body] = answer.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(body).toBe(JSON.stringify({ detail: 'Invalid HTTP request received.' }));
    const one = await rawAnswer(origin(), `GET ${path} HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n`);
    expect(one).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });

  // Before, `100 Continue` came first (the body was asked for, then refused), or without a
  // credential the route's own check answered 401.
  it.each([
    ['bench', () => bench.url, '/api/v1/agents/register', 'application/x-www-form-urlencoded'],
    ['bench, a route needing a credential,', () => bench.url, '/api/v1/jobs/flash', 'multipart/form-data; boundary=x'],
    ['relay', () => relay.baseUrl, '/register', 'application/json'],
    ['relay, a route needing a credential,', () => relay.baseUrl, '/items', 'application/json'],
  ])('%s: with Expect: 100-continue, the same 400 and no 100 Continue before it', async (_service, origin, path, type) => {
    const answer = await rawAnswer(origin(), `POST ${path} HTTP/1.1\r\nContent-Type: ${type}\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(answer.split('\r\n\r\n')[1]).toBe(JSON.stringify({ detail: 'Invalid HTTP request received.' }));
  });
});
