import net from 'node:net';
import { once } from 'node:events';
import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import type { Job } from '../clients/bench/bench-types.js';
import { clockFromFakeTimers } from '../core/clock.js';
import type { DebugStream } from './debug-stream-client.js';
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
  it('closes the stream, and sends nothing, when GDB disconnects while the stream is opening', async () => {
    const { served, gdb } = await connectedPair();
    let opened!: (stream: DebugStream) => void;
    const calls: string[] = [];
    const stream: DebugStream = {
      send: () => void calls.push('send'),
      onData: () => undefined,
      onClosed: (listener) => void queueMicrotask(() => listener(undefined)),
      close: () => void calls.push('close'),
    };
    const debug: DebugStreamCalls = { open: () => new Promise<DebugStream>((resolve) => (opened = resolve)) };
    const closedHere = once(served, 'close');
    const relaying = relaySocket(served, debug, 'job_1', () => undefined);
    gdb.write('$?#3f');
    gdb.destroy();
    await closedHere;
    opened(stream);
    await relaying;
    expect(calls).toEqual(['close']);
  });

  it('sends what GDB wrote before the stream opened, then what it writes after, and writes the target\'s bytes back', async () => {
    const { served, gdb } = await connectedPair();
    let opened!: (stream: DebugStream) => void;
    const sent: string[] = [];
    let allSent: () => void = () => undefined;
    const sentAll = new Promise<void>((resolve) => (allSent = resolve));
    let toGdb: (bytes: Buffer) => void = () => undefined;
    let close: (reason: string | undefined) => void = () => undefined;
    const stream: DebugStream = {
      send: (bytes) => {
        sent.push(bytes.toString('latin1'));
        if (sent.join('') === '+$?#3f$g#67') allSent();
      },
      onData: (listener) => (toGdb = listener),
      onClosed: (listener) => (close = listener),
      close: () => undefined,
    };
    const debug: DebugStreamCalls = { open: () => new Promise<DebugStream>((resolve) => (opened = resolve)) };
    const lines: string[] = [];
    const relaying = relaySocket(served, debug, 'job_1', (line) => lines.push(line));
    gdb.write('+$?#3f');
    opened(stream);
    gdb.write('$g#67');
    await sentAll;
    const answer = once(gdb, 'data') as Promise<[Buffer]>;
    toGdb(Buffer.from('+$S05#b8'));
    expect((await answer)[0].toString('latin1')).toBe('+$S05#b8');
    close('job job_1 is done');
    await relaying;
    expect(lines).toEqual(['the debug stream closed: job job_1 is done']);
    gdb.destroy();
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
