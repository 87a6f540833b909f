import { readFileSync } from 'node:fs';
import net from 'node:net';
import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { type Backend, BackendError } from '../../backends/backend.js';
import { loadFirmwareImage } from '../../backends/image-check.js';
import { MockBackend } from '../../backends/mock/mock-backend.js';
import { SimBackend } from '../../backends/sim/sim-backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { type Clock, clockFromFakeTimers, systemClock } from '../../core/clock.js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { runDebugSession } from '../../harness/debug/debug-session.js';
import { debugElf } from '../support/gdb-batch.js';

/**
 * Bad input to `hilbench debug`'s GDB port (issue 32), with a raw RSP client instead of GDB so
 * each case is exact, wherever the port is served: a second debugger is refused, a malformed or
 * oversized packet closes only that connection, a debugger that vanishes frees the board after
 * the idle timeout (on the injected clock), none is taken after the debugging ended; and the mock
 * refuses clearly, and a debugger before flash is refused.
 */
const pico = loadBoardCatalog().find((b) => b.id === 'pico')!;
const image = loadFirmwareImage(readFileSync(debugElf('pico')));
const IDLE_MS = 60_000;

/**
 * Where the port is served: by the engine's thread (the sim device's `serve`, decision 0740), or
 * by the host's bridge from the device's GDB stream, as for QEMU, Renode and the probe (`serve`
 * hidden). Both take connections through one `DebuggerSlot` (decision 0811): the rules below hold
 * for both.
 */
const servers = [
  ['the engine thread', { bridge: false }],
  ["the host's bridge", { bridge: true }],
] as const;

/** A sim backend that records when its device is closed (the board freed); with `bridge`, its device offers no `serve`. */
function observedSim(options: { bridge: boolean }): { backend: Backend; closed: () => boolean } {
  const sim = new SimBackend({ clock: systemClock });
  let closed = false;
  const backend: Backend = {
    name: 'sim',
    availability: (board) => sim.availability(board),
    open: async (board, openOptions) => {
      const device = await sim.open(board, openOptions);
      const close = device.close.bind(device);
      if (options.bridge) Object.assign(device.debug!, { serve: undefined });
      return Object.assign(device, { close: async () => ((closed = true), close()) });
    },
  };
  return { backend, closed: () => closed };
}

function startSession(backend: Backend, clock: Clock = systemClock) {
  const logged: string[] = [];
  const logWaiters = new Set<() => void>();
  let listening: (port: number) => void = () => undefined;
  const port = new Promise<number>((resolve) => (listening = resolve));
  const outcome = runDebugSession(backend, pico, image, {
    clock,
    gdbPort: 0,
    idleTimeoutMs: IDLE_MS,
    afterDetachSeconds: 0.5,
    onUart: () => undefined,
    log: (line) => {
      logged.push(line);
      for (const waiter of logWaiters) waiter();
    },
    onListening: listening,
  });
  /** Resolves once a log line matches `pattern` (an event, not a timer). */
  const logShows = (pattern: RegExp) =>
    new Promise<string>((resolve) => {
      const check = () => {
        const line = logged.find((l) => pattern.test(l));
        if (line) {
          logWaiters.delete(check);
          resolve(line);
        }
      };
      logWaiters.add(check);
      check();
    });
  return { port, outcome, logShows };
}

/** A raw RSP client: everything received so far, a wait for a pattern in it, and its close. */
async function rawClient(port: number) {
  // Half-open allowed, as a debugger that ends its side after its last packet keeps reading; it ends its own once the bench ended its side.
  const socket = net.createConnection({ port, host: '127.0.0.1', allowHalfOpen: true });
  socket.once('end', () => socket.end());
  await new Promise((resolve) => socket.once('connect', resolve));
  let received = '';
  const waiters = new Set<() => void>();
  socket.on('data', (data: Buffer) => {
    received += data.toString('latin1');
    for (const waiter of waiters) waiter();
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const receives = (pattern: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const match = pattern.exec(received);
        if (match) {
          waiters.delete(check);
          resolve(match[0]);
        }
      };
      waiters.add(check);
      void closed.then(() => (pattern.test(received) ? check() : reject(new Error(`closed before ${pattern} arrived; received ${JSON.stringify(received)}`))));
      check();
    });
  return { socket, receives, closed, received: () => received };
}

describe.each(servers)('hilbench debug: bad input, the port served by %s', (_where, server) => {
  it('refuses a second debugger with a message naming the board, and the first goes on', { timeout: 60_000 }, async () => {
    const session = startSession(observedSim(server).backend);
    const port = await session.port;
    const first = await rawClient(port);
    first.socket.write(rspPacket('?'));
    await first.receives(/\$T05thread:1;#/);
    const second = await rawClient(port);
    await second.closed;
    expect(second.received()).toContain('E.board pico already has a debugger attached (one at a time)');
    first.socket.write(rspPacket('m20000000,4'));
    expect(await first.receives(/\$[0-9a-f]{8}#/)).toMatch(/^\$[0-9a-f]{8}#/);
    first.socket.write(rspPacket('D'));
    expect(await session.outcome).toMatchObject({ outcome: 'passed' });
  });

  it.each([
    ['a malformed packet (bytes outside any packet)', 'hello gdb', /not GDB's remote protocol \(byte 0x68 outside a packet/],
    ['an oversized packet', `$${'a'.repeat(70_000)}`, /not GDB's remote protocol \(a packet longer than 65536 bytes/],
  ])('%s closes only that connection; the next debugger is served', { timeout: 60_000 }, async (_what, input, logged) => {
    const session = startSession(observedSim(server).backend);
    const port = await session.port;
    const bad = await rawClient(port);
    bad.socket.write(input);
    await bad.closed;
    expect(await session.logShows(/closed the debugger's connection/)).toMatch(logged);
    const good = await rawClient(port);
    good.socket.write(rspPacket('?'));
    await good.receives(/\$T05thread:1;#/);
    good.socket.write(rspPacket('D'));
    expect(await session.outcome).toMatchObject({ outcome: 'passed' });
  });

  it('answers a packet just under the bound (a 60 KB memory write), and the connection goes on', { timeout: 60_000 }, async () => {
    const session = startSession(observedSim(server).backend);
    const client = await rawClient(await session.port);
    const bytes = 30_000;
    // 60 000 hex digits: over what GDB sends (rp2040js advertises 16 KiB) but under the 64 KiB bound, so answered, not closed.
    client.socket.write(rspPacket(`M20010000,${bytes.toString(16)}:${'a5'.repeat(bytes)}`));
    await client.receives(/\$OK#/);
    client.socket.write(rspPacket('m20010000,4'));
    await client.receives(/\$a5a5a5a5#/);
    client.socket.write(rspPacket('D'));
    expect(await session.outcome).toMatchObject({ outcome: 'passed' });
  });

  it('answers a debugger that ended its side after its last packet (a half-close), then closes', { timeout: 60_000 }, async () => {
    const session = startSession(observedSim(server).backend);
    const client = await rawClient(await session.port);
    client.socket.end(rspPacket('?'));
    await client.closed;
    expect(client.received()).toMatch(/\$T05thread:1;#/);
    const next = await rawClient(await session.port);
    next.socket.write(rspPacket('D'));
    expect(await session.outcome).toMatchObject({ outcome: 'passed' });
  });

  it('frees the board when the debugger vanished and none came back within the idle timeout (injected clock)', { timeout: 60_000 }, async () => {
    const fake = createClock();
    const observed = observedSim(server);
    const session = startSession(observed.backend, clockFromFakeTimers(fake));
    const client = await rawClient(await session.port);
    client.socket.write(rspPacket('?'));
    await client.receives(/\$T05thread:1;#/);
    client.socket.destroy();
    await session.logShows(/disconnected without detaching/);
    fake.tick(IDLE_MS - 1);
    expect(observed.closed()).toBe(false);
    fake.tick(1);
    expect(await session.outcome).toEqual({ outcome: 'timeout', reason: 'no debugger connected for 60 s: the board is freed' });
    expect(observed.closed()).toBe(true);
  });

  it('takes no debugger once the debugging ended (a detach): the port is closed', { timeout: 60_000 }, async () => {
    const session = startSession(observedSim(server).backend);
    const port = await session.port;
    const first = await rawClient(port);
    first.socket.write(rspPacket('D'));
    expect(await session.outcome).toMatchObject({ outcome: 'passed' });
    const late = net.createConnection({ port, host: '127.0.0.1' });
    expect(await new Promise((resolve) => late.once('error', (err: NodeJS.ErrnoException) => resolve(err.code)))).toBe('ECONNREFUSED');
  });
});

describe('hilbench debug: refusals before a port', () => {
  it('the mock backend refuses in words that say why and where to go', async () => {
    const outcome = await startSession(new MockBackend()).outcome;
    expect(outcome.outcome).toBe('failed');
    expect(outcome.reason).toMatch(/^unavailable: board pico runs on the mock backend, which executes no firmware .* use a backend that runs it \(sim for pico and uno/);
  });

  it('refuses a debugger before the image is flashed', async () => {
    const device = await new SimBackend({ clock: systemClock }).open(pico);
    try {
      const attached = device.debug!.attach();
      await expect(attached).rejects.toBeInstanceOf(BackendError);
      await expect(attached).rejects.toMatchObject({ kind: 'bad-image', message: expect.stringMatching(/before flash/) });
    } finally {
      await device.close();
    }
  });
});
