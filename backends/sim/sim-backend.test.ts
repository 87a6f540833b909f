import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClock } from '@sinonjs/fake-timers';
import { afterAll, describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { clockFromFakeTimers, systemClock } from '../../core/clock.js';
import { parseElf } from '../../core/elf.js';
import { type SimImage } from '../../sim/sim-engine.js';
import {
  elfImage,
  THUMB_HELLO_BKPT_5,
  THUMB_SLEEP_FOR_EVER,
  THUMB_SPIN,
  THUMB_UNMODELLED_READ,
  thumbProgram,
} from '../../test/support/sim-programs.js';
import { firmwareImage } from '../../test/support/make-elf.js';
import { BackendError, type FirmwareImage } from '../backend.js';
import { SimBackend, type SimBackendOptions } from './sim-backend.js';
import type { SimDevice } from './sim-device.js';

const boards = loadBoardCatalog();
const pico = boards.find((b) => b.id === 'pico')!;
const uno = boards.find((b) => b.id === 'uno')!;
const image = (sim: SimImage): FirmwareImage => firmwareImage(sim.bytes);
const failOnUnmodelled = (message: string) => {
  throw new Error(`unexpected unmodelled access: ${message}`);
};
const backend = (options: Partial<SimBackendOptions> = {}) => new SimBackend({ clock: systemClock, onUnmodelled: failOnUnmodelled, ...options });
const openPico = async (options: Partial<SimBackendOptions> = {}) => (await backend(options).open(pico)) as SimDevice;
const rejection = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BackendError);
  return error as BackendError;
};

const tempDirs: string[] = [];
afterAll(() => {
  for (const d of tempDirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempFile(name: string, bytes: Uint8Array): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-sim-'));
  tempDirs.push(dir);
  const file = path.join(dir, name);
  writeFileSync(file, bytes);
  return file;
}

/** 16 KiB that look like a boot ROM: SP in SRAM, a Thumb reset handler at 0x101, `b .` there. */
function fakeBootromBytes(): Uint8Array {
  const rom = new Uint8Array(0x4000);
  const v = new DataView(rom.buffer);
  v.setUint32(0, 0x20041f00, true);
  v.setUint32(4, 0x101, true);
  v.setUint16(0x100, 0xe7fe, true);
  return rom;
}

describe('SimBackend availability', () => {
  it('runs pico and uno with nothing installed, and refuses boards without a sim engine', async () => {
    await expect(backend().availability(pico)).resolves.toEqual({ available: true });
    await expect(backend().availability(uno)).resolves.toEqual({ available: true });
    const qemuOnly = boards.find((b) => !b.backends.sim)!;
    await expect(backend().availability(qemuOnly)).resolves.toEqual({
      available: false,
      reason: expect.stringMatching(/no backends\.sim\.engine/),
    });
    expect((await rejection(backend().open(qemuOnly))).kind).toBe('unavailable');
  });

  it('makes RP2040 boards unavailable when the configured bootrom cannot be read, naming where to get it', async () => {
    const missing = new SimBackend({ clock: systemClock, rp2040BootromPath: '/nonexistent/b1.bin' });
    const pico_ = await missing.availability(pico);
    expect(pico_).toEqual({ available: false, reason: expect.stringMatching(/\/nonexistent\/b1\.bin.*raspberrypi\/pico-bootrom/) });
    await expect(missing.availability(uno)).resolves.toEqual({ available: true });

    const garbage = backend({ rp2040BootromPath: tempFile('rom.bin', new Uint8Array(64).fill(0x55)) });
    await expect(garbage.availability(pico)).resolves.toEqual({ available: false, reason: expect.stringMatching(/not an RP2040 bootrom/) });
    const good = backend({ rp2040BootromPath: tempFile('rom.bin', fakeBootromBytes()) });
    await expect(good.availability(pico)).resolves.toEqual({ available: true });
  });
});

describe('SimBackend pins', () => {
  it("lists the board file's pin names and the MCU's for every board it runs, and none for others", () => {
    expect(backend().pinNames(pico)).toEqual(expect.arrayContaining(['LED', 'GP0', 'GP25', 'GP29']));
    expect(backend().pinNames(uno)).toEqual(expect.arrayContaining(['D13', 'A5', 'PB5', 'PD7']));
    expect(backend().pinNames(boards.find((b) => !b.backends.sim)!)).toBeUndefined();
  });

  it('every board file pin name of a simulated board names a pin of its MCU', () => {
    for (const board of boards.filter((b) => b.backends.sim)) {
      const names = backend().pinNames(board)!;
      const mcuPins = names.slice(Object.keys(board.pins).length);
      for (const [alias, pin] of Object.entries(board.pins)) expect(mcuPins, `${board.id} ${alias}: ${pin}`).toContain(pin);
    }
  });

  it('a device refuses a pin name its board does not have, and reading before flash', async () => {
    const device = await backend().open(uno);
    expect((await rejection(device.pins!.read('D99'))).message).toMatch(/uno has no pin "D99"/);
    expect((await rejection(device.pins!.read('LED'))).kind).toBe('bad-image');
    await device.pins!.drive('d2', 1);
    await device.close();
  });
});

describe('SimDevice', () => {
  it('runs an image with a boot2 stage on the own boot ROM with no ROM file, and refuses a bad boot2 CRC as bad-image', async () => {
    const device = await openPico();
    const romTest = new Uint8Array(readFileSync(fileURLToPath(new URL('../../firmware/examples/pico/rom-test.elf', import.meta.url))));
    await device.flash(firmwareImage(romTest));
    let uart = '';
    device.onUart((chunk) => (uart += new TextDecoder().decode(chunk.bytes)));
    await expect(device.run(100_000_000)).resolves.toMatchObject({ reason: 'exited', exitCode: 0 });
    expect(uart).toMatch(/rom-test PASS \d+ checks/);

    const corrupt = romTest.slice();
    // Byte 0x10 of boot2 (file offset of .boot2 + 0x10): any change breaks its CRC.
    const boot2Offset = parseElf(romTest).sections.find((s) => s.name === '.boot2')!.offset;
    corrupt[boot2Offset + 0x10]! ^= 0xff;
    const error = await rejection(device.flash(firmwareImage(corrupt)));
    expect(error.kind).toBe('bad-image');
    expect(error.message).toMatch(/boot2 stage .* fails the boot ROM's CRC32 check/);

    const withRom = await openPico({ rp2040BootromPath: tempFile('b1.bin', fakeBootromBytes()) });
    await withRom.flash(image(thumbProgram(THUMB_SLEEP_FOR_EVER, [], ['.boot2'])));
    await withRom.close();
    await device.close();
  });

  it('refuses an image outside the memory map before loading anything', async () => {
    const device = await openPico();
    const error = await rejection(device.flash(image(elfImage(40, [{ paddr: 0x08000000, data: new Uint8Array(16) }]))));
    expect(error.kind).toBe('bad-image');
    expect(error.message).toMatch(/0x08000000/);
    expect((await rejection(device.run(1_000_000))).message).toMatch(/before flash/);
  });

  it('reports a run that reaches the boot ROM without one as bad-image, not as a crash', async () => {
    const device = await openPico();
    await device.flash(image(thumbProgram('11208047')));
    const error = await rejection(device.run(1_000_000));
    expect(error.kind).toBe('bad-image');
    expect(error.message).toMatch(/boot ROM, which is not the entry of a function/);
  });

  it('counts received bytes the firmware never read as dropped, and bytes still on their way at reset', async () => {
    const device = await openPico();
    await device.flash(image(thumbProgram(THUMB_SLEEP_FOR_EVER)));
    await device.writeUart(new Uint8Array(40).fill(0x61));
    await device.run(10_000_000);
    expect(device.droppedUartBytes).toBe(8);
    await device.writeUart(new Uint8Array(5));
    await device.reset();
    expect(device.droppedUartBytes).toBe(8 + 5);
  });

  it('is cancelled mid-run by its signal, keeps its place, and can run on afterwards', async () => {
    const controller = new AbortController();
    const device = await openPico({ sliceNanos: 1_000_000 });
    await device.flash(image(thumbProgram(THUMB_SPIN)));
    const run = rejection(device.run(600_000_000_000, { signal: controller.signal }));
    controller.abort(new Error('user pressed stop'));
    const error = await run;
    expect(error.kind).toBe('cancelled');
    // The engine's thread sees the abort at its next slice end: a whole number of 1 ms slices.
    const [, elapsed] = /after (\d+) simulated ns: its abort signal fired/.exec(error.message) ?? [];
    expect(Number(elapsed)).toBeGreaterThanOrEqual(1_000_000);
    expect(Number(elapsed) % 1_000_000).toBeLessThan(1_000);
    await expect(device.run(Number(elapsed) + 8_000_000)).resolves.toMatchObject({ reason: 'elapsed' });
    expect(device.stats.simulatedNanos).toBeGreaterThanOrEqual(Number(elapsed) + 8_000_000);
    await device.close();
  });

  it('is cancelled while its thread waits for the verdict on `until`, and can run on afterwards', async () => {
    const controller = new AbortController();
    const device = await openPico({ sliceNanos: 1_000_000 });
    // Prints, then stops at a breakpoint: the thread asks the host about `until` on the chunk
    // that carries the UART output, and waits for its verdict.
    await device.flash(image(thumbProgram(THUMB_HELLO_BKPT_5)));
    let asks = 0;
    // The abort lands while the thread is parked on this very ask, and `until` does not hold:
    // the run must end as cancelled (not as `until`, not hung waiting for a verdict).
    const until = () => {
      asks += 1;
      controller.abort(new Error('user pressed stop'));
      return false;
    };
    const error = await rejection(device.run(600_000_000_000, { signal: controller.signal, until }));
    expect(error.kind).toBe('cancelled');
    expect(error.message).toMatch(/its abort signal fired/);
    expect(asks).toBe(1);
    // The device is not left waiting: it runs on to the breakpoint.
    await expect(device.run(600_000_000_000, { until: () => false })).resolves.not.toMatchObject({ reason: 'elapsed' });
    await device.close();
  });

  it('stops a run when the device is closed, and refuses use after close', async () => {
    const device = await openPico();
    await device.flash(image(thumbProgram(THUMB_SPIN)));
    const run = rejection(device.run(600_000_000_000));
    await device.close();
    const error = await run;
    expect(error.kind).toBe('cancelled');
    expect(error.message).toMatch(/the device was closed/);
    // The chip is released, its totals are kept.
    expect(device.stats.simulatedNanos).toBeGreaterThanOrEqual(1_000_000);
    expect((await rejection(device.writeUart(new Uint8Array(1)))).message).toMatch(/after close/);
  });

  it('refuses a second run while one is in progress', async () => {
    const device = await openPico();
    await device.flash(image(thumbProgram(THUMB_SPIN)));
    const first = device.run(3_000_000);
    expect((await rejection(device.run(1_000_000))).message).toMatch(/while a run is in progress/);
    await expect(first).resolves.toMatchObject({ reason: 'elapsed' });
    await device.close();
  });

  it("fails the run with a UART listener's exception on the output that comes with the run's answer", async () => {
    const device = await openPico();
    // "hi\n" and the halt fall in one slice: the output reaches the host only in the run's answer (decision 0730).
    device.onUart(() => {
      throw new Error('the listener broke');
    });
    await device.flash(image(thumbProgram(THUMB_HELLO_BKPT_5)));
    const error = await rejection(device.run(1_000_000));
    expect(error.kind).toBe('internal');
    expect(error.message).toMatch(/the listener broke/);
    await device.close();
  });

  it('reports crashes as stops and accumulates stats, with host time on the injected clock', async () => {
    const fake = createClock(0);
    const device = await openPico({ clock: clockFromFakeTimers(fake) });
    const seen: string[] = [];
    device.onUart((c) => {
      seen.push(new TextDecoder().decode(c.bytes));
      fake.tick(2);
    });
    await device.flash(image(thumbProgram(THUMB_HELLO_BKPT_5)));
    const stop = await device.run(1_000_000);
    expect(stop).toMatchObject({ reason: 'crashed', message: expect.stringMatching(/bkpt #5/) });
    expect(seen.join('')).toBe('hi\n');
    // Host time is what the injected clock says passed during the run (2 ms, ticked by the listener).
    expect(device.stats).toMatchObject({ instructions: 8, simulatedNanos: stop.elapsedNanos, sleptNanos: 0, hostMs: 2, coreClockHz: 125_000_000 });

    await device.flash(image(thumbProgram(THUMB_SLEEP_FOR_EVER)));
    await device.run(3_000_000);
    const { stats } = device;
    expect(stats.instructions).toBeLessThan(20);
    expect(stats.simulatedNanos).toBe(stop.elapsedNanos + 3_000_000);
    expect(stats.sleptNanos).toBeGreaterThan(2_999_000);
    expect(stats.hostMs).toBe(2);
    await device.close();
  });

  it('reports accesses to registers rp2040js does not model, with a running count', async () => {
    const reports: Array<[string, number]> = [];
    const device = await openPico({ onUnmodelled: (message, count) => reports.push([message, count]) });
    await device.flash(image(thumbProgram(THUMB_UNMODELLED_READ)));
    await device.run(1_000_000);
    expect(reports).toEqual([[expect.stringMatching(/ROSC_BASE: Unimplemented peripheral read from 0x0/), 1]]);
  });
});

describe('SimBackend engine threads', () => {
  /** The nice values of this process's threads, from /proc (field 19 of each task's stat). */
  const threadNices = () =>
    readdirSync('/proc/self/task').map((task) => Number(readFileSync(`/proc/self/task/${task}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]));

  it.skipIf(os.platform() !== 'linux')('runs engine threads at engineThreadNice, and leaves them alone without it', async () => {
    expect(threadNices()).not.toContain(13);
    const device = await backend({ engineThreadNice: 13 }).open(pico);
    expect(threadNices()).toContain(13);
    await device.close();
    expect(() => backend({ engineThreadNice: 20 })).toThrow(/engineThreadNice must be a whole number from 1 to 19, not 20/);
  });
});
