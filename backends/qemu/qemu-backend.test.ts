import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { firmwareImage, makeElf } from '../../test/support/make-elf.js';
import { BackendError, type Device, NANOS_PER_SECOND } from '../backend.js';
import { processExists } from '../process/emulator-process.js';
import { QemuBackend } from './qemu-backend.js';

/**
 * Failure paths of the QEMU backend against the real qemu-system-arm (the contract suites in
 * test/contract/qemu-<board>.contract.test.ts cover the normal paths). The images are made in memory:
 * `loop` spins at reset (`b .`), `lockup` has an execute-never reset vector, so QEMU 7.2 dies with
 * "qemu: fatal: Lockup" and status 134.
 */
const board = loadBoardCatalog().find((b) => b.id === 'mps2-an385')!;
const loop = firmwareImage(makeElf());
const lockupVectors = new Uint8Array(16);
new DataView(lockupVectors.buffer).setUint32(0, 0x20001000, true);
new DataView(lockupVectors.buffer).setUint32(4, 0xfffffff1, true);
const lockup = firmwareImage(makeElf({ segments: [{ paddr: 0, data: lockupVectors }], entry: 0xfffffff1 }));

// A 20-byte CMSDK UART echo, assembled once with arm-none-eabi-as (-mcpu=cortex-m3):
//   mov.w r0, #0x40004000; movs r1, #3; str r1, [r0, #8]      @ CTRL: TX and RX enable
//   loop: ldr r1, [r0, #4]; lsls r1, r1, #30; bpl loop       @ STATE bit 1: RX buffer full
//   ldr r1, [r0]; str r1, [r0]; b loop                        @ DATA: echo the byte
const echoCode = [0x4f, 0xf0, 0x40, 0x20, 0x03, 0x21, 0x81, 0x60, 0x41, 0x68, 0x89, 0x07, 0xfc, 0xd5, 0x01, 0x68, 0x01, 0x60, 0xf9, 0xe7];
const echoBytes = new Uint8Array(8 + echoCode.length);
new DataView(echoBytes.buffer).setUint32(0, 0x20001000, true);
new DataView(echoBytes.buffer).setUint32(4, 0x9, true);
echoBytes.set(echoCode, 8);
const echo = firmwareImage(makeElf({ segments: [{ paddr: 0, data: echoBytes }], entry: 0x9 }));

const scratch = mkdtempSync(path.join(os.tmpdir(), 'hbq-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function pidOf(device: Device): number {
  const pid = (device as unknown as { pid: number | undefined }).pid;
  if (pid === undefined) throw new Error('device has no QEMU process');
  return pid;
}

const caught = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e);

describe('QemuBackend failure paths', () => {
  it('reports a missing qemu-system-arm with the install hint and refuses to open', async () => {
    const backend = new QemuBackend({ clock: systemClock, qemuBinary: path.join(scratch, 'no-such-qemu') });
    const availability = await backend.availability(board);
    expect(availability.available).toBe(false);
    expect(!availability.available && availability.reason).toContain('install qemu-system-arm (apt-get install -y qemu-system-arm)');
    const error = await caught(backend.open(board));
    expect(error).toBeInstanceOf(BackendError);
    expect((error as BackendError).kind).toBe('unavailable');
  });

  it('reports a board without a QEMU machine as unavailable', async () => {
    const pico = loadBoardCatalog().find((b) => b.id === 'pico')!;
    await expect(new QemuBackend({ clock: systemClock }).availability(pico)).resolves.toMatchObject({ available: false, reason: expect.stringContaining('backends.qemu') });
  });

  it('reports a machine this QEMU does not model as unavailable', async () => {
    const fake = { ...board, id: 'fake', backends: { qemu: { machine: 'no-such-machine', semihosting: true } } };
    await expect(new QemuBackend({ clock: systemClock }).availability(fake)).resolves.toMatchObject({ available: false, reason: expect.stringContaining('no-such-machine') });
  });

  it('maps "Could not load kernel" to bad-image, with status and output tail', async () => {
    // A wrapper that deletes the kernel (the last argument) before exec'ing the real QEMU, which
    // then fails exactly as it does for an unreadable file.
    const wrapper = path.join(scratch, 'qemu-losing-kernel');
    writeFileSync(wrapper, '#!/bin/sh\nfor a; do last="$a"; done\nrm -f "$last"\nexec qemu-system-arm "$@"\n');
    chmodSync(wrapper, 0o755);
    const device = await new QemuBackend({ clock: systemClock, qemuBinary: wrapper }).open(board);
    try {
      // QEMU loads the kernel only once the UART client has connected, i.e. in the first run.
      await device.flash(loop);
      const error = await caught(device.run(NANOS_PER_SECOND));
      expect(error).toBeInstanceOf(BackendError);
      expect((error as BackendError).kind).toBe('bad-image');
      expect((error as BackendError).exitCode).toBe(1);
      expect((error as BackendError).outputTail).toMatch(/Could not load kernel '.*fw\.elf'/);
      await expect(device.run(NANOS_PER_SECOND)).rejects.toMatchObject({ kind: 'bad-image', message: expect.stringContaining('no firmware loaded') });
    } finally {
      await device.close();
    }
  });

  it('reports a Lockup as a crash with the fault and PC, and keeps reporting it until reset', async () => {
    const device = await new QemuBackend({ clock: systemClock }).open(board);
    try {
      await device.flash(lockup);
      const stop = await device.run(10 * NANOS_PER_SECOND);
      expect(stop).toMatchObject({ reason: 'crashed', message: expect.stringMatching(/^Lockup: can't escalate 3 to HardFault.* at PC=0x[0-9a-f]{8}$/) });
      await expect(device.run(20 * NANOS_PER_SECOND)).resolves.toEqual(stop);
      // After reset the same image runs (and crashes) again in a fresh QEMU.
      await device.reset();
      await expect(device.run(10 * NANOS_PER_SECOND)).resolves.toMatchObject({ reason: 'crashed' });
    } finally {
      await device.close();
    }
  });

  it('ends QEMU when a run is cancelled: no orphan process', async () => {
    const device = await new QemuBackend({ clock: systemClock }).open(board);
    try {
      await device.flash(loop);
      const pid = pidOf(device);
      expect(processExists(pid)).toBe(true);
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error('test cancels')), 200);
      const error = await caught(device.run(600 * NANOS_PER_SECOND, { signal: controller.signal }));
      expect(error).toMatchObject({ kind: 'cancelled' });
      expect(processExists(pid)).toBe(false);
      // The device is usable again: the next run starts a fresh QEMU.
      await expect(device.run(0.1 * NANOS_PER_SECOND)).resolves.toMatchObject({ reason: 'elapsed' });
    } finally {
      await device.close();
    }
  });

  it('ends QEMU on close, whether held in reset or running, and settles a pending run', async () => {
    const held = await new QemuBackend({ clock: systemClock }).open(board);
    await held.flash(loop);
    const heldPid = pidOf(held);
    await held.close();
    expect(processExists(heldPid)).toBe(false);

    const running = await new QemuBackend({ clock: systemClock }).open(board);
    await running.flash(loop);
    const runningPid = pidOf(running);
    const pending = caught(running.run(600 * NANOS_PER_SECOND));
    await new Promise((resolve) => setTimeout(resolve, 200));
    await running.close();
    expect(await pending).toMatchObject({ kind: 'cancelled' });
    expect(processExists(runningPid)).toBe(false);
    await expect(running.flash(loop)).rejects.toBeInstanceOf(BackendError);
  });

  it('reset ends the process and the next run starts a new one', async () => {
    const device = await new QemuBackend({ clock: systemClock }).open(board);
    try {
      await device.flash(loop);
      await device.run(0.05 * NANOS_PER_SECOND);
      const first = pidOf(device);
      await device.reset();
      expect(processExists(first)).toBe(false);
      await device.run(0.05 * NANOS_PER_SECOND);
      expect(pidOf(device)).not.toBe(first);
    } finally {
      await device.close();
    }
  });

  it('delivers writeUart bytes to the firmware, also bytes written before the first run', async () => {
    const device = await new QemuBackend({ clock: systemClock }).open(board);
    try {
      let received = '';
      device.onUart((chunk) => (received += new TextDecoder().decode(chunk.bytes)));
      await device.flash(echo);
      await device.writeUart(new TextEncoder().encode('ping'));
      const first = await device.run(10 * NANOS_PER_SECOND, { until: () => received.includes('ping') });
      expect(first.reason).toBe('until');
      await device.writeUart(new TextEncoder().encode('pong'));
      const second = await device.run(20 * NANOS_PER_SECOND, { until: () => received.includes('pong') });
      expect(second.reason).toBe('until');
      expect(received).toBe('pingpong');
    } finally {
      await device.close();
    }
  });

  it('refuses a second run while one is in progress', async () => {
    const device = await new QemuBackend({ clock: systemClock }).open(board);
    try {
      await device.flash(loop);
      const first = device.run(0.3 * NANOS_PER_SECOND);
      await expect(device.run(NANOS_PER_SECOND)).rejects.toMatchObject({ kind: 'internal' });
      await expect(first).resolves.toMatchObject({ reason: 'elapsed' });
    } finally {
      await device.close();
    }
  });
});
