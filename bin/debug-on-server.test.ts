import net from 'node:net';
import { once } from 'node:events';
import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import type { Job } from '../clients/bench/bench-types.js';
import { clockFromFakeTimers } from '../core/clock.js';
import type { Duplex } from 'node:stream';
import { duplexPair } from '../core/duplex-pair.js';
import { rspPacket } from '../core/gdb/rsp-packet.js';
import { type DebugStreamCalls, finalErrorReply, relaySocket, RemoteNeverRan, START_LOOK_MS, START_WAIT_MS, untilRunning } from './debug-on-server.js';

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
    let opened!: (stream: Duplex) => void;
    const [stream, server] = duplexPair();
    const sent: Buffer[] = [];
    server.on('data', (chunk: Buffer) => sent.push(chunk));
    const debug: DebugStreamCalls = { open: () => new Promise<Duplex>((resolve) => (opened = resolve)) };
    const closedHere = once(served, 'close');
    const relaying = relaySocket(served, debug, 'job_1', () => undefined);
    gdb.write('$?#3f');
    gdb.destroy();
    await closedHere;
    const serverClosed = once(server, 'close');
    opened(stream);
    await relaying;
    await serverClosed;
    expect(sent).toEqual([]);
  });

  it("sends what GDB wrote before the stream opened, then what it writes after, writes the target's bytes back, and logs a final E. reply as why it closed", async () => {
    const { served, gdb } = await connectedPair();
    let opened!: (stream: Duplex) => void;
    const [stream, server] = duplexPair();
    let sent = '';
    let allSent: () => void = () => undefined;
    const sentAll = new Promise<void>((resolve) => (allSent = resolve));
    server.on('data', (chunk: Buffer) => {
      sent += chunk.toString('latin1');
      if (sent === '+$?#3f$g#67') allSent();
    });
    const debug: DebugStreamCalls = { open: () => new Promise<Duplex>((resolve) => (opened = resolve)) };
    const lines: string[] = [];
    const relaying = relaySocket(served, debug, 'job_1', (line) => lines.push(line));
    gdb.write('+$?#3f');
    // Written once the first bytes were read, so that they went before the stream opened.
    await new Promise((resolve) => served.once('data', resolve));
    opened(stream);
    gdb.write('$g#67');
    await sentAll;
    let toGdb = '';
    gdb.on('data', (chunk: Buffer) => (toGdb += chunk.toString('latin1')));
    const gdbEnded = once(gdb, 'end');
    server.write('+$S05#b8');
    server.end(`+${rspPacket('E.job job_1 is done')}`);
    await relaying;
    await gdbEnded;
    expect(toGdb).toBe(`+$S05#b8+${rspPacket('E.job job_1 is done')}`);
    expect(lines).toEqual(['the debug stream closed: job job_1 is done']);
    gdb.destroy();
  });
});

describe('finalErrorReply', () => {
  it("reads an E. reply that ends the stream, escapes undone; nothing when the stream ends otherwise", () => {
    expect(finalErrorReply(`$S05#b8+${rspPacket('E.a # and a $ closed it')}`)).toBe('a # and a $ closed it');
    expect(finalErrorReply(`${rspPacket('E.earlier')}+$OK#9a`)).toBeUndefined();
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
