import { createClock } from '@sinonjs/fake-timers';
import { once } from 'node:events';
import { type Socket, connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { type RunningRelay, startRelayServer, tempDataDir } from '../support/relay-test-kit.js';

/**
 * Both services pass their start options' connection cap and head timeout to the one listen
 * (server/http/listen.ts, where both are tested in full): with a cap of one connection, a second is
 * closed unanswered while the first is served; a head that stalls is answered 408 and closed.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 28, 12)));
const data = tempDataDir();
let bench: BenchTestApp;
let relay: RunningRelay;

beforeAll(async () => {
  bench = await startBenchTestApp({ maxConnections: 1, headersTimeoutMs: 50 });
  relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), maxConnections: 1, headersTimeoutMs: 50 });
});
afterAll(async () => {
  await bench.close();
  await relay.close();
  data.remove();
});

function socketTo(origin: string): { socket: Socket; received: () => string } {
  const { hostname, port } = new URL(origin);
  const socket = connect(Number(port), hostname);
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.on('error', () => {}); // a reset is one way of being refused
  return { socket, received: () => text };
}

describe.each([
  ['bench', () => bench.url, '/api/v1/health'],
  ['relay', () => relay.url, '/health'],
])('%s listen options', (_service, origin, path) => {
  it('serves one connection and closes a second unanswered (maxConnections 1)', async () => {
    const first = socketTo(origin());
    first.socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
    await once(first.socket, 'data');
    expect(first.received()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    // The first is still open (keep-alive): the second is one too many.
    const second = socketTo(origin());
    second.socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
    await once(second.socket, 'close');
    expect(second.received()).toBe('');
    first.socket.destroy();
  });

  it('answers a stalled request head 408 and closes it (headersTimeoutMs 50)', async () => {
    // Alone (the previous test's connection may still be closing on the server: retried until accepted).
    for (let attempt = 0; attempt < 100; attempt++) {
      const stalled = socketTo(origin());
      stalled.socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n`);
      await once(stalled.socket, 'close');
      if (stalled.received() === '') continue;
      expect(stalled.received()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(stalled.received().split('\r\n\r\n')[1]).toBe(JSON.stringify({ detail: 'Request Timeout' }));
      return;
    }
    throw new Error('every connection was refused: the previous one never closed on the server');
  });
});
