import net from 'node:net';
import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import type { DeviceDebug, GdbStream, ServedGdbEvents } from '../../backends/backend.js';
import { clockFromFakeTimers, systemClock } from '../../core/clock.js';
import { rspPacket } from '../../core/gdb/rsp-packet.js';
import { GdbBridge, type GdbBridgeEnd } from './gdb-bridge.js';

/** A target that records what reaches it and answers every packet with `OK`. */
function recordingDebug(): { debug: DeviceDebug; received: string[] } {
  const received: string[] = [];
  const debug: DeviceDebug = {
    attach: async () => {
      const listeners = new Set<(text: string) => void>();
      let close: (value: { reason: string }) => void = () => undefined;
      const stream: GdbStream = {
        write: (text) => {
          received.push(text);
          // One answer per packet: a debugger that ends its side is ended once each is answered.
          for (let packets = text.split('$').length - 1; packets > 0; packets--) for (const listener of listeners) listener(`+${rspPacket('OK')}`);
        },
        onData: (listener) => {
          listeners.add(listener);
          return () => listeners.delete(listener);
        },
        closed: new Promise((resolve) => (close = resolve)),
        close: async () => close({ reason: 'closed' }),
      };
      return stream;
    },
  };
  return { debug, received };
}

async function connect(port: number) {
  const socket = net.createConnection({ port, host: '127.0.0.1' });
  await new Promise((resolve) => socket.once('connect', resolve));
  let text = '';
  socket.on('data', (data: Buffer) => (text += data.toString('latin1')));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, closed, text: () => text };
}

describe('GdbBridge', () => {
  it('hands the target whole packets only, however the debugger splits them', async () => {
    const { debug, received } = recordingDebug();
    const bridge = await GdbBridge.start({ debug, boardId: 'b', clock: systemClock, port: 0, idleTimeoutMs: 60_000, log: () => undefined });
    const client = await connect(bridge.port);
    const packet = rspPacket('m20000000,4');
    client.socket.write(`+${packet.slice(0, 5)}`);
    client.socket.write(packet.slice(5));
    // As GDB does after its detach: send D, then close.
    client.socket.end(rspPacket('D'));
    expect(await bridge.ended).toMatchObject({ reason: 'detached' });
    expect(received.join('')).toBe(`+${packet}${rspPacket('D')}`);
    // Each write to the target is whole units: acks and complete packets, never a fragment.
    expect(received.every((unit) => /^(?:\+|-|\x03|\$[^#$]*#[0-9a-f]{2})+$/.test(unit))).toBe(true);
  });

  it('ends "exited" on the exit reply of the target, however its bytes arrive, and passes every byte on untouched', async () => {
    const debug: DeviceDebug = {
      attach: async () => {
        const listeners = new Set<(text: string) => void>();
        let close: (value: { reason: string }) => void = () => undefined;
        return {
          // The reply to a continue, cut inside the exit packet: a stub's output may arrive in any pieces.
          write: (text) => {
            if (!text.includes('$c#')) return;
            for (const piece of ['+$O4869#', '2a$', 'W0', '3#b', 'a']) for (const listener of listeners) listener(piece);
          },
          onData: (listener) => {
            listeners.add(listener);
            return () => listeners.delete(listener);
          },
          closed: new Promise((resolve) => (close = resolve)),
          close: async () => close({ reason: 'closed' }),
        } satisfies GdbStream;
      },
    };
    const bridge = await GdbBridge.start({ debug, boardId: 'b', clock: systemClock, port: 0, idleTimeoutMs: 60_000, log: () => undefined });
    const client = await connect(bridge.port);
    const expected = `+$O4869#2a${rspPacket('W03')}`;
    const replied = new Promise<void>((resolve) => client.socket.on('data', () => client.text().length >= expected.length && resolve()));
    client.socket.write(rspPacket('c'));
    await replied;
    expect(client.text()).toBe(expected);
    client.socket.end();
    expect(await bridge.ended).toMatchObject({ reason: 'exited', exitCode: 3 });
  });

  it('passes no byte of an oversized packet to the target, and closes that connection only', async () => {
    const { debug, received } = recordingDebug();
    const lines: string[] = [];
    const bridge = await GdbBridge.start({ debug, boardId: 'b', clock: systemClock, port: 0, idleTimeoutMs: 60_000, maxPacketBytes: 1024, log: (l) => lines.push(l) });
    const client = await connect(bridge.port);
    for (let i = 0; i < 8; i++) client.socket.write('$' + 'a'.repeat(300));
    await client.closed;
    expect(received).toEqual([]);
    expect(lines.join('\n')).toMatch(/longer than 1024 bytes/);
    const next = await connect(bridge.port);
    next.socket.write(rspPacket('?'));
    next.socket.end(rspPacket('D'));
    expect(await bridge.ended).toMatchObject({ reason: 'detached' });
    expect(received.join('')).toBe(rspPacket('?') + rspPacket('D'));
  });
});

/** A device that serves GDB itself: the events it was given, its close, and a way to close it from the device's side. */
function servingDebug() {
  let events: ServedGdbEvents | undefined;
  let closeFromDevice: (value: { reason: string }) => void = () => undefined;
  let closedByBench = false;
  const closed = new Promise<{ reason: string }>((resolve) => (closeFromDevice = resolve));
  const debug: DeviceDebug = {
    attach: () => Promise.reject(new Error('a served device is not attached')),
    serve: async (options) => {
      events = options.events;
      return { port: 4242, closed, close: async () => void ((closedByBench = true), closeFromDevice({ reason: 'closed by the bench' })) };
    },
  };
  return { debug, events: () => events!, closedByBench: () => closedByBench, failFromDevice: (reason: string) => closeFromDevice({ reason }) };
}

describe('GdbBridge on a port the device serves', () => {
  it("keeps the idle timer by the port's events (injected clock), logs them, and ends with how the debugger's connection ended", async () => {
    const fake = createClock();
    const served = servingDebug();
    const lines: string[] = [];
    const bridge = await GdbBridge.start({ debug: served.debug, attachFirst: true, boardId: 'b', clock: clockFromFakeTimers(fake), port: 0, idleTimeoutMs: 1000, log: (l) => lines.push(l) });
    expect(bridge.port).toBe(4242);
    let ended: GdbBridgeEnd | undefined;
    void bridge.ended.then((end) => (ended = end));
    const events = served.events();
    events.connected();
    fake.tick(5000);
    await Promise.resolve();
    expect(ended).toBeUndefined();
    events.refused('board b already has a debugger attached (one at a time)');
    events.protocolError('byte 0x68 outside a packet');
    events.disconnected(undefined);
    expect(lines).toEqual([
      'refused a second debugger: board b already has a debugger attached (one at a time)',
      "closed the debugger's connection: it sent what is not GDB's remote protocol (byte 0x68 outside a packet); the board waits for another",
      'the debugger disconnected without detaching; the core stays halted until one connects again (or 1 s pass)',
    ]);
    events.connected();
    events.disconnected({ reason: 'detached', message: 'the debugger detached; the firmware runs on' });
    expect(await bridge.ended).toEqual({ reason: 'detached', message: 'the debugger detached; the firmware runs on' });
    expect(served.closedByBench()).toBe(true);
  });

  it('ends idle with nobody connected for the idle timeout, and failed when the device closes the port itself', async () => {
    const fake = createClock();
    const idle = servingDebug();
    const idleBridge = await GdbBridge.start({ debug: idle.debug, boardId: 'b', clock: clockFromFakeTimers(fake), port: 0, idleTimeoutMs: 1000, log: () => undefined });
    fake.tick(1000);
    expect(await idleBridge.ended).toMatchObject({ reason: 'idle' });
    const failing = servingDebug();
    const failingBridge = await GdbBridge.start({ debug: failing.debug, boardId: 'b', clock: clockFromFakeTimers(fake), port: 0, idleTimeoutMs: 1000, log: () => undefined });
    failing.failFromDevice('the simulator thread of b failed: boom');
    expect(await failingBridge.ended).toEqual({ reason: 'failed', message: "the board's GDB port closed: the simulator thread of b failed: boom" });
  });
});
