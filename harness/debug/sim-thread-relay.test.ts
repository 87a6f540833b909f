import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadFirmwareImage } from '../../backends/image-check.js';
import { SimBackend } from '../../backends/sim/sim-backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { debugElf } from '../../test/support/gdb-batch.js';
import { runDebugSession } from './debug-session.js';

let server: Server | undefined;
const upgraded: Socket[] = [];
afterEach(async () => {
  // Upgraded connections are no longer the server's: closed here, or its close waits for them.
  for (const socket of upgraded.splice(0)) socket.destroy();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** A bench server's debug legs, as the engine's thread dials them: each upgrade request is handed to the test in order. */
async function legServer(): Promise<{ url: string; nextLeg: () => Promise<{ req: IncomingMessage; socket: Socket }> }> {
  const waiting: Array<{ req: IncomingMessage; socket: Socket }> = [];
  const takers: Array<(leg: { req: IncomingMessage; socket: Socket }) => void> = [];
  server = createServer();
  server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    upgraded.push(socket);
    const leg = { req, socket };
    const taker = takers.shift();
    if (taker) taker(leg);
    else waiting.push(leg);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    nextLeg: () => {
      const leg = waiting.shift();
      return leg ? Promise.resolve(leg) : new Promise((resolve) => takers.push(resolve));
    },
  };
}

/** Answers a held leg 101 (a debugger came): the socket is then the debugger's stream; `receives` waits for a pattern in what the board sent. */
function debuggerOn(socket: Socket) {
  socket.write('HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: tcp\r\n\r\n');
  let received = '';
  const waiters = new Set<() => void>();
  socket.on('data', (data: Buffer) => {
    received += data.toString('latin1');
    for (const waiter of waiters) waiter();
  });
  // The board ended the stream: this side ends too, as the server's splice does.
  socket.once('end', () => socket.end());
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return {
    closed,
    receives: (pattern: RegExp) =>
      new Promise<string>((resolve, reject) => {
        const check = () => (pattern.test(received) ? (waiters.delete(check), resolve(received)) : undefined);
        waiters.add(check);
        void closed.then(() => (pattern.test(received) ? check() : reject(new Error(`closed before ${pattern}; received ${JSON.stringify(received)}`))));
        check();
      }),
  };
}

describe("a sim engine's thread dialling a debug job's legs itself (decision 0910)", () => {
  it('dials with the worker token, serves a debugger per leg through its slot (a bad packet ends only its leg), and a detach ends the session', { timeout: 60_000 }, async () => {
    const legs = await legServer();
    const pico = loadBoardCatalog().find((b) => b.id === 'pico')!;
    const image = loadFirmwareImage(readFileSync(debugElf('pico')));
    const logged: string[] = [];
    let relayedByDevice: boolean | undefined;
    let listenedOn: number | undefined;
    const outcome = runDebugSession(new SimBackend({ clock: systemClock }), pico, image, {
      clock: systemClock,
      relay: { serverUrl: legs.url, token: 'hbw_t', jobId: 'job_1' },
      idleTimeoutMs: 60_000,
      afterDetachSeconds: 0.2,
      onUart: () => undefined,
      log: (line) => logged.push(line),
      onBridge: (bridge) => (relayedByDevice = bridge.relayedByDevice),
      onListening: (port) => (listenedOn = port),
    });
    const first = await legs.nextLeg();
    expect([first.req.url, first.req.headers.upgrade, first.req.headers.authorization]).toEqual(['/api/v1/worker/jobs/job_1/debug', 'tcp', 'Bearer hbw_t']);
    const gdb = debuggerOn(first.socket);
    first.socket.write(rspPacket('?'));
    await gdb.receives(/\$T05thread:1;#/);
    // Bytes that are not RSP: this leg ends with why, and the thread dials the next.
    first.socket.write('hello gdb');
    expect(await gdb.receives(/\$E\.[^#]*#[0-9a-f]{2}$/)).toMatch(/\$E\.the debugger sent what is not GDB's remote protocol \(byte 0x68 outside a packet/);
    await gdb.closed;
    const second = await legs.nextLeg();
    const next = debuggerOn(second.socket);
    second.socket.write(rspPacket('?'));
    await next.receives(/\$T05thread:1;#/);
    second.socket.write(`+${rspPacket('D')}`);
    await next.receives(/\$OK#9a/);
    expect(await outcome).toMatchObject({ outcome: 'passed' });
    // The thread dialled them: the bridge took none, and nothing listened.
    expect([relayedByDevice, listenedOn]).toEqual([true, 0]);
    expect(logged).toContain("closed the debugger's connection: it sent what is not GDB's remote protocol (byte 0x68 outside a packet (expected $, +, - or 0x03)); the board waits for another");
  });
});
