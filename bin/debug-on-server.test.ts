import net from 'node:net';
import { once } from 'node:events';
import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import type { Job } from '../clients/bench/bench-types.js';
import { clockFromFakeTimers } from '../core/clock.js';
import { type DebugStreamCalls, relaySocket, RemoteNeverRan, START_LOOK_MS, START_WAIT_MS, untilRunning } from './debug-on-server.js';

const servers: net.Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

/** A loopback server whose first connection is handed to the test, and a GDB-side socket connected to it. */
async function connectedPair(): Promise<{ served: net.Socket; gdb: net.Socket }> {
  const server = net.createServer();
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address() as net.AddressInfo;
  const accepted = once(server, 'connection') as Promise<[net.Socket]>;
  const gdb = net.connect(address.port, '127.0.0.1');
  const [served] = await accepted;
  return { served, gdb };
}

describe('relaySocket', () => {
  it('closes the stream, and asks nothing more, when GDB disconnects while the stream is opening', async () => {
    const { served, gdb } = await connectedPair();
    let opened!: (stream: string) => void;
    const calls: string[] = [];
    const debug: DebugStreamCalls = {
      open: () => new Promise<string>((resolve) => (opened = resolve)),
      send: async () => void calls.push('send'),
      receive: async () => (calls.push('receive'), { text: '', closed: 'closed by the test' }),
      close: async (_jobId, stream) => void calls.push(`close ${stream}`),
    };
    const closedHere = once(served, 'close');
    const relaying = relaySocket(served, debug, 'job_1', () => undefined);
    gdb.destroy();
    await closedHere;
    opened('job_1.1');
    await relaying;
    // The close is sent after the open settles: give its promise chain its turns.
    for (let i = 0; i < 5 && calls.length === 0; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(['close job_1.1']);
  });
});

describe('untilRunning', () => {
  it('gives up, saying what it waited for, when the job is not running within START_WAIT_MS', async () => {
    const fake = createClock(0);
    let looks = 0;
    const client = { getJob: async (jobId: string) => (looks++, { job_id: jobId, state: 'flashing' } as Job) };
    const waiting = untilRunning(client, 'job_1', clockFromFakeTimers(fake), undefined).then(
      () => undefined,
      (err: unknown) => err,
    );
    await fake.tickAsync(START_WAIT_MS + START_LOOK_MS);
    const err = await waiting;
    expect(err).toBeInstanceOf(RemoteNeverRan);
    expect((err as Error).message).toBe(
      "job job_1 was still flashing after 120 s, waiting for its worker to flash the board and halt its core for a debugger (is the board's worker online?)",
    );
    expect(looks).toBe(START_WAIT_MS / START_LOOK_MS + 1);
  });
});
