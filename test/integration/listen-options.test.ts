import { createClock } from '@sinonjs/fake-timers';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { once } from 'node:events';
import { type Socket, connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { DEFAULT_BODY_STALL_TIMEOUT_MS } from '../../server/http/listen.js';
import { memoryLogger } from '../../server/http/logger.js';
import { type BenchTestApp, startBenchTestApp } from '../support/bench-test-app.js';
import { type RunningRelay, startRelayServer, tempDataDir } from '../support/relay-test-kit.js';

/**
 * Both services pass their start options' connection cap and head timeout to the one listen
 * (server/http/listen.ts, where both are tested in full): with a cap of one connection, a stalled head
 * makes room for a newcomer, which is served; a head that stalls is answered 408 and closed.
 * Each service runs twice: capped at one connection with a head timeout too long to matter, so
 * only eviction can make room (with a short one the stalled head could get its own 408 first on a
 * loaded machine, and the newcomer be served without any eviction), and with a 50 ms head timeout.
 * A request body dripped slower than the pace (body-stall.ts, on each service's fake clock) is
 * answered 408 once a window passes, saying the pace it missed, and closed; a newcomer takes its
 * place before that.
 */
const relayFake = createClock(Date.UTC(2026, 10, 28, 12));
const clock = clockFromFakeTimers(relayFake);
// The body pace is checked every sixth of its window.
const BODY_CHECK_MS = DEFAULT_BODY_STALL_TIMEOUT_MS / 6;
const data = tempDataDir();
const cappedData = tempDataDir();
const LONG_HEAD_TIMEOUT_MS = 120_000;
let bench: BenchTestApp;
let relay: RunningRelay;
let benchCapped: BenchTestApp;
let relayCapped: RunningRelay;

beforeAll(async () => {
  bench = await startBenchTestApp({ maxConnections: 1, headersTimeoutMs: 50 });
  relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), maxConnections: 1, headersTimeoutMs: 50 });
  benchCapped = await startBenchTestApp({ maxConnections: 1, headersTimeoutMs: LONG_HEAD_TIMEOUT_MS });
  relayCapped = await startRelayServer({ clock, dataDir: cappedData.dir, logger: memoryLogger(), maxConnections: 1, headersTimeoutMs: LONG_HEAD_TIMEOUT_MS });
});
afterAll(async () => {
  await Promise.all([bench.close(), relay.close(), benchCapped.close(), relayCapped.close()]);
  data.remove();
  cappedData.remove();
});

function socketTo(origin: string): { socket: Socket; received: () => string } {
  const { hostname, port } = new URL(origin);
  const socket = connect(Number(port), hostname);
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.on('error', () => {}); // a reset is one way of being refused
  return { socket, received: () => text };
}

/** Resolves once the service has parsed the head of a request sent on `client` (node's diagnostics channel, which the body pace watches too). */
function headParsed(client: Socket): Promise<void> {
  return new Promise((resolve) => {
    const onHead = (message: unknown) => {
      if ((message as { socket: Socket }).socket.remotePort !== client.localPort) return;
      unsubscribe('http.server.request.start', onHead);
      resolve();
    };
    subscribe('http.server.request.start', onHead);
  });
}

/** What a body cut by the pace is told when nothing more came after its head's read (the figures are pinned in body-stall.test.ts). */
const NO_BYTE = /^Request Timeout: no byte of the request body came in the last [\d.]+ s \(it must come at 240 bytes a second or more\)$/;
/** The same, closed for room after a check found it behind. */
const NO_BYTE_FOR_ROOM = /^Request Timeout: no byte of the request body came in the last [\d.]+ s \(it must come at 240 bytes a second or more\), and its connection was needed for another client$/;

// A route of each service that reads its body before answering, and the start of one (of 100 bytes).
const slowBodyOf = {
  bench: 'POST /api/v1/agents/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nlabel=a',
  relay: 'POST /register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a',
};

describe.each([
  ['bench' as const, () => bench.url, () => benchCapped.url, '/api/v1/health', () => bench.fake, () => benchCapped.fake],
  ['relay' as const, () => relay.url, () => relayCapped.url, '/health', () => relayFake, () => relayFake],
])('%s listen options', (service, origin, cappedOrigin, path, fake, cappedFake) => {
  it('closes a stalled head for room and serves the newcomer (maxConnections 1)', async () => {
    const stalled = socketTo(cappedOrigin());
    // Not events.once: that rejects on the reset that may follow the eviction.
    const stalledClosed = new Promise((resolve) => stalled.socket.once('close', resolve));
    stalled.socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nX-a: `);
    await new Promise((resolve) => stalled.socket.once('connect', resolve));
    // Node refused the newcomer while the stalled head held the one place (until its head timeout,
    // here far past the test's own): only closing the stalled head makes room.
    const newcomer = socketTo(cappedOrigin());
    newcomer.socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
    await new Promise((resolve) => newcomer.socket.once('data', resolve));
    expect(newcomer.received()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    await stalledClosed;
    newcomer.socket.destroy();
  });

  it('answers a CONNECT 405 in JSON with an empty Allow, and closes (node closed it unanswered)', async () => {
    const tunnel = socketTo(origin());
    tunnel.socket.write('CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n');
    await new Promise((resolve) => tunnel.socket.once('close', resolve));
    const [head, body] = tunnel.received().split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 405 Method Not Allowed\r\n/);
    expect(head).toMatch(/\r\nAllow: \r\n/);
    expect(head).toMatch(/\r\nConnection: close(\r\n|$)/);
    expect(body).toBe(JSON.stringify({ detail: 'Method Not Allowed' }));
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

  it('answers 408 saying the pace it missed to a request body dripped slower than it once a window passes on its clock, and closes the connection', async () => {
    const slow = socketTo(origin());
    const slowClosed = new Promise((resolve) => slow.socket.once('close', resolve));
    await new Promise((resolve) => slow.socket.once('connect', resolve));
    const parsed = headParsed(slow.socket);
    slow.socket.write(slowBodyOf[service]);
    await parsed;
    // A window and a check: the checks run every BODY_CHECK_MS from the service's start, not from this head.
    fake().tick(DEFAULT_BODY_STALL_TIMEOUT_MS + BODY_CHECK_MS);
    await slowClosed;
    expect(slow.received()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(slow.received()).toMatch(/\r\nConnection: close\r\n/);
    expect((JSON.parse(slow.received().split('\r\n\r\n')[1]!) as { detail: string }).detail).toMatch(NO_BYTE);
  });

  it('lets a newcomer take the place of a request body found behind its pace (maxConnections 1)', async () => {
    const slow = socketTo(cappedOrigin());
    const slowClosed = new Promise((resolve) => slow.socket.once('close', resolve));
    await new Promise((resolve) => slow.socket.once('connect', resolve));
    const parsed = headParsed(slow.socket);
    slow.socket.write(slowBodyOf[service]);
    await parsed;
    // One check finds it behind (far from its window's end): only that makes it closable for room.
    cappedFake().tick(BODY_CHECK_MS);
    const newcomer = socketTo(cappedOrigin());
    newcomer.socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
    await new Promise((resolve) => newcomer.socket.once('data', resolve));
    expect(newcomer.received()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    await slowClosed;
    expect((JSON.parse(slow.received().split('\r\n\r\n')[1]!) as { detail: string }).detail).toMatch(NO_BYTE_FOR_ROOM);
    newcomer.socket.destroy();
  });
});
