import net from 'node:net';
import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../core/clock.js';
import { BackendError, type UartChunk } from './backend.js';
import { SocketUart, writeUartSocket } from './socket-uart.js';

/** A connected loopback pair: `emulator` plays the emulator's end, `device` is what SocketUart reads. */
async function socketPair(): Promise<{ emulator: net.Socket; device: net.Socket; server: net.Server }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1' }, resolve));
  const address = server.address() as net.AddressInfo;
  const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
  const device = net.createConnection({ host: '127.0.0.1', port: address.port });
  await new Promise<void>((resolve) => device.once('connect', () => resolve()));
  return { emulator: await accepted, device, server };
}

/** Resolves once `check()` holds (polled once per event-loop turn; the test times out otherwise). */
function waitFor(check: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const poll = () => (check() ? resolve() : setImmediate(poll));
    poll();
  });
}

const open: Array<{ emulator: net.Socket; device: net.Socket; server: net.Server }> = [];
afterEach(() => {
  for (const pair of open.splice(0)) {
    pair.device.destroy();
    pair.emulator.destroy();
    pair.server.close();
  }
});

describe('SocketUart', () => {
  it('counts bytes as dropped while no release applies, then delivers them stamped from the release', async () => {
    const fake = createClock(1_000);
    const uart = new SocketUart(clockFromFakeTimers(fake));
    const pair = await socketPair();
    open.push(pair);
    const chunks: UartChunk[] = [];
    let delivered = 0;
    uart.subscribe((c) => chunks.push(c));
    const core: { releasedAtMs?: number } = {};
    uart.capture(pair.device, () => core.releasedAtMs, () => delivered++);

    pair.emulator.write('old');
    await waitFor(() => uart.droppedBytes === 3);
    expect([chunks.length, delivered]).toEqual([0, 0]);

    core.releasedAtMs = fake.now;
    fake.tick(25);
    pair.emulator.write('hi');
    await waitFor(() => delivered === 1);
    expect(chunks.map((c) => [c.atNanos, new TextDecoder().decode(c.bytes)])).toEqual([[25_000_000, 'hi']]);
    expect(uart.droppedBytes).toBe(3);
  });

  it('never stamps a byte before the release, and stamps 0 while held', () => {
    const fake = createClock(5_000);
    const uart = new SocketUart(clockFromFakeTimers(fake));
    expect(uart.elapsedNanos(undefined)).toBe(0);
    expect(uart.elapsedNanos(6_000)).toBe(0);
    expect(uart.elapsedNanos(4_999)).toBe(1_000_000);
  });

  it('delivers nothing to listeners after clear', async () => {
    const uart = new SocketUart(clockFromFakeTimers(createClock(0)));
    const pair = await socketPair();
    open.push(pair);
    let calls = 0;
    let delivered = 0;
    uart.subscribe(() => calls++);
    uart.clear();
    uart.capture(pair.device, () => 0, () => delivered++);
    pair.emulator.write('x');
    await waitFor(() => delivered === 1);
    expect(calls).toBe(0);
  });
});

describe('writeUartSocket', () => {
  it('resolves once the socket has taken the bytes', async () => {
    const pair = await socketPair();
    open.push(pair);
    const received = new Promise<string>((resolve) => pair.emulator.once('data', (b: Buffer) => resolve(b.toString())));
    await writeUartSocket(pair.device, new TextEncoder().encode('ping'), 'QEMU');
    expect(await received).toBe('ping');
  });

  it('rejects with serial-lost naming the emulator when the socket is gone', async () => {
    const pair = await socketPair();
    open.push(pair);
    pair.device.destroy();
    const error = await writeUartSocket(pair.device, new Uint8Array([1]), 'Renode').catch((err: unknown) => err);
    expect(error).toBeInstanceOf(BackendError);
    expect(error).toMatchObject({ kind: 'serial-lost', message: expect.stringMatching(/^UART write to Renode failed: /) });
  });
});
