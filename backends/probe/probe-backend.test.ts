import { createClock } from '@sinonjs/fake-timers';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SerialPortMock } from 'serialport';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { FAKE_PROBES_ENV, type FakeBehaviour, writeFakeProbes } from '../../test/fakes/openocd/fake-board.js';
import { fakeOpenocdPath } from '../../test/fakes/openocd/fake-bench.js';
import { firmwareImage, makeElf } from '../../test/support/make-elf.js';
import { BackendError } from '../backend.js';
import { BenchFileError, parseBenchFile } from './bench-file.js';
import { ProbeBackend } from './probe-backend.js';
import { InMemoryQuarantineStore } from './quarantine-store.js';
import type { ProbeDevice } from './probe-device.js';

/**
 * ProbeBackend with `SerialPortMock.binding` (echo on, so `writeUart` produces received bytes)
 * and the stand-in openocd, on a fake clock: ordering, timestamps, timeouts, cancellation and
 * board health without a pty. The pty path is covered in test/integration/probe-fakes.test.ts.
 */
const catalog = loadBoardCatalog();
const board = catalog.find((b) => b.id === 'stm32f4-discovery')!;
const serialPath = '/dev/serial/by-id/usb-STMicroelectronics_STM32_STLink_FAKE-if02';
const image = firmwareImage(makeElf({ segments: [{ paddr: 0x0800_0000, data: new Uint8Array(64) }] }));
const encode = (text: string) => new TextEncoder().encode(text);

let dir: string;
let probesFile: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'probe-backend-test-'));
  probesFile = path.join(dir, 'probes.json');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => SerialPortMock.binding.reset());

function setup(options: { behaviour?: FakeBehaviour; createPort?: boolean; quarantineAfterFailures?: number } = {}) {
  // 'silent': the fake firmware would write to a pty; here the test plays the board.
  rmSync(path.join(dir, 'state', 'invocations.log'), { force: true });
  writeFakeProbes(probesFile, [{ serialNumber: 'F4', uart: '/dev/null', behaviour: options.behaviour ?? 'silent', stateDir: path.join(dir, 'state') }]);
  if (options.createPort ?? true) SerialPortMock.binding.createPort(serialPath, { echo: true, record: true });
  const fake = createClock(0);
  const { bench } = testBenchFile(options);
  const backend = new ProbeBackend({
    bench,
    clock: clockFromFakeTimers(fake),
    openocdPath: fakeOpenocdPath,
    serialBinding: SerialPortMock.binding,
    toolEnv: { [FAKE_PROBES_ENV]: probesFile },
  });
  return { backend, fake };
}

/** The bench file of the tests: stm32f4-discovery on a fake openocd probe. */
function testBenchFile(options: { quarantineAfterFailures?: number } = {}) {
  const bench = parseBenchFile(
    {
      version: 1,
      quarantineAfterFailures: options.quarantineAfterFailures ?? 3,
      boards: {
        'stm32f4-discovery': {
          probe: { kind: 'openocd', serialNumber: 'F4', interface: 'interface/stlink.cfg' },
          serial: { path: serialPath },
          timeouts: { flashMs: 10_000, resetMs: 10_000, serialOpenMs: 1_000, killGraceMs: 1_000 },
        },
      },
    },
    path.join(dir, 'bench.yaml'),
  );
  return { bench };
}

const pidAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Waits until the stand-in's invocation log matches `pattern`; returns the match. */
function waitForInvocation(pattern: RegExp): Promise<RegExpExecArray> {
  const log = path.join(dir, 'state', 'invocations.log');
  return vi.waitFor(
    () => {
      const match = existsSync(log) ? pattern.exec(readFileSync(log, 'utf8')) : null;
      if (!match) throw new Error(`the stand-in tool has not logged ${pattern} yet`);
      return match;
    },
    { timeout: 20_000, interval: 20 },
  );
}

const hangPid = async () => Number((await waitForInvocation(/hang pid=(\d+)\s*$/))[1]);

describe('ProbeBackend (serial mock, stand-in openocd, fake clock)', () => {
  it('discards what arrives before reset release and timestamps the rest from the release', async () => {
    const { backend, fake } = setup();
    const device = (await backend.open(board)) as ProbeDevice;
    const chunks: Array<{ atNanos: number; text: string }> = [];
    device.onUart((c) => chunks.push({ atNanos: c.atNanos, text: new TextDecoder().decode(c.bytes) }));
    try {
      await device.flash(image);
      await device.writeUart(encode('previous firmware'));
      await vi.waitFor(() => expect(device.discardedBeforeResetBytes).toBe(17));

      const running = device.run(1_000_000_000);
      // The release command starts after the input flush; its start is time zero.
      await waitForInvocation(/reset run/);
      fake.tick(250);
      await device.writeUart(encode('hello'));
      await vi.waitFor(() => expect(chunks.map((c) => c.text).join('')).toBe('hello'));
      expect(chunks[0]!.atNanos).toBe(250_000_000);
      fake.tick(750);
      await expect(running).resolves.toEqual({ reason: 'elapsed', elapsedNanos: 1_000_000_000 });
    } finally {
      await device.close();
    }
  });

  it('refuses a second open of the same board, and use after close', async () => {
    const { backend } = setup();
    const device = await backend.open(board);
    await expect(backend.open(board)).rejects.toMatchObject({ kind: 'unavailable', message: expect.stringMatching(/already open/) });
    await device.close();
    await expect(device.run(1)).rejects.toMatchObject({ kind: 'internal', message: expect.stringMatching(/used after close/) });
    const again = await backend.open(board);
    await again.close();
  });

  it('is cancelled before opening anything when its signal is already aborted', async () => {
    const { backend } = setup();
    const controller = new AbortController();
    controller.abort();
    await expect(backend.open(board, { signal: controller.signal })).rejects.toMatchObject({ kind: 'cancelled' });
    // Nothing was left open: the board can be opened again.
    const device = await backend.open(board);
    await device.close();
  });

  it('refuses an image outside flash as bad-image, before any tool runs', async () => {
    const { backend } = setup();
    const device = await backend.open(board);
    try {
      const ram = firmwareImage(makeElf({ segments: [{ paddr: 0x2000_0000, data: new Uint8Array(16) }] }));
      await expect(device.flash(ram)).rejects.toMatchObject({ kind: 'bad-image', message: expect.stringMatching(/0x20000000.*outside stm32f407vg's flash/) });
      await expect(device.run(1)).rejects.toMatchObject({ kind: 'bad-image', message: expect.stringMatching(/before flash/) });
    } finally {
      await device.close();
    }
  });

  it('kills a hung tool at its deadline on the injected clock and reports timeout', async () => {
    const { backend, fake } = setup({ behaviour: 'hang' });
    const device = await backend.open(board);
    try {
      const flashing = device.flash(image).catch((e: unknown) => e);
      const pid = await hangPid();
      fake.tick(10_000);
      const error = (await flashing) as BackendError;
      expect(error).toBeInstanceOf(BackendError);
      expect(error.kind).toBe('timeout');
      expect(error.message).toMatch(/did not finish within 10000 ms and was killed/);
      expect(error.message).toContain('clock speed 2000 kHz');
      expect(pidAlive(pid)).toBe(false);
    } finally {
      await device.close();
    }
  });

  it('kills the tool when the job is cancelled, and when the device is closed', async () => {
    const { backend } = setup({ behaviour: 'hang' });
    const controller = new AbortController();
    let device = await backend.open(board);
    const cancelled = device.flash(image, { signal: controller.signal }).catch((e: unknown) => e);
    const first = await hangPid();
    controller.abort();
    expect(await cancelled).toMatchObject({ kind: 'cancelled' });
    expect(pidAlive(first)).toBe(false);
    await device.close();

    rmSync(path.join(dir, 'state', 'invocations.log'), { force: true });
    device = await backend.open(board);
    const closed = device.flash(image).catch((e: unknown) => e);
    const second = await hangPid();
    await device.close();
    expect(await closed).toMatchObject({ kind: 'cancelled' });
    expect(pidAlive(second)).toBe(false);
  });

  it('quarantines after 3 consecutive infrastructure failures, says why, and is released by an administrator', async () => {
    const { backend } = setup({ createPort: false });
    for (let i = 0; i < 3; i++) {
      await expect(backend.open(board)).rejects.toMatchObject({ kind: 'serial-lost', message: expect.stringContaining(serialPath) });
    }
    const availability = await backend.availability(board);
    expect(availability).toEqual({
      available: false,
      reason: expect.stringMatching(/^quarantined after 3 consecutive infrastructure failures: cannot open serial device \/dev\/serial\/by-id\//),
    });
    await expect(backend.open(board)).rejects.toMatchObject({ kind: 'unavailable', message: expect.stringMatching(/quarantined/) });
    expect((await backend.health(board.id)).consecutiveFailures).toBe(3);

    await backend.release(board.id);
    expect(await backend.availability(board)).toEqual({ available: true });
  });

  it('names what else is wrong with a quarantined board before its quarantine (a worker then knows a release alone will not bring it back)', async () => {
    const quarantineStore = new InMemoryQuarantineStore();
    await quarantineStore.put(board.id, { consecutiveFailures: 3, lastFailure: 'x', quarantine: { sinceMs: 0, reason: 'quarantined after 3 consecutive infrastructure failures: x' } });
    const { bench } = testBenchFile();
    const withoutTool = new ProbeBackend({ bench, clock: clockFromFakeTimers(createClock(0)), openocdPath: path.join(dir, 'no-openocd-here'), quarantineStore });
    expect(await withoutTool.availability(board)).toEqual({ available: false, reason: expect.stringMatching(/no-openocd-here is not installed or not executable/) });
    const withTool = new ProbeBackend({ bench, clock: clockFromFakeTimers(createClock(0)), openocdPath: fakeOpenocdPath, serialBinding: SerialPortMock.binding, quarantineStore });
    expect(await withTool.availability(board)).toEqual({ available: false, reason: 'quarantined after 3 consecutive infrastructure failures: x' });
  });

  it('does not count the user\'s mistakes (bad images, cancellations) towards quarantine', async () => {
    const { backend } = setup();
    const device = await backend.open(board);
    try {
      for (let i = 0; i < 4; i++) await device.flash(firmwareImage(makeElf({ machine: 83 }))).catch(() => undefined);
      const controller = new AbortController();
      controller.abort();
      await device.flash(image, { signal: controller.signal }).catch(() => undefined);
      expect(await backend.health(board.id)).toMatchObject({ consecutiveFailures: 0, quarantine: undefined });
    } finally {
      await device.close();
    }
  });

  it('says which boards the bench attaches, and refuses health checks it cannot run', async () => {
    const { backend } = setup();
    const uno = catalog.find((b) => b.id === 'uno')!;
    expect(await backend.availability(uno)).toEqual({
      available: false,
      reason: expect.stringMatching(/board uno is not attached to this bench \(.*bench\.yaml lists stm32f4-discovery\)/),
    });
    await expect(backend.healthCheck('stm32f4-discovery')).rejects.toMatchObject({ kind: 'unavailable', message: expect.stringMatching(/no healthCheck/) });
    await expect(backend.release('uno')).rejects.toMatchObject({ kind: 'unavailable' });
  });

  it('refuses a bench file naming a board the catalog lacks, or a target nobody names', () => {
    const attach = { probe: { kind: 'openocd', serialNumber: 'X', interface: 'interface/stlink.cfg' }, serial: { path: '/dev/ttyX' } };
    const clock = clockFromFakeTimers(createClock());
    expect(() => new ProbeBackend({ bench: parseBenchFile({ version: 1, boards: { 'no-such-board': attach } }, '/b.yaml'), clock })).toThrow(
      BenchFileError,
    );
    // uno's board file names no openocdTarget, so the bench file must.
    expect(() => new ProbeBackend({ bench: parseBenchFile({ version: 1, boards: { uno: attach } }, '/b.yaml'), clock })).toThrow(
      /\/b\.yaml: boards\.uno\.probe\.target: required/,
    );
  });
});
