import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleepMs } from 'node:timers/promises';
import { createClock } from '@sinonjs/fake-timers';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BackendError } from '../../backends/backend.js';
import type { BenchFile } from '../../backends/probe/bench-file.js';
import { ProbeBackend } from '../../backends/probe/probe-backend.js';
import { afterFailure, InMemoryQuarantineStore } from '../../backends/probe/quarantine-store.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { type Clock, clockFromFakeTimers, systemClock } from '../../core/clock.js';
import { runFirmware } from '../../harness/run-firmware.js';
import { fakeBootLine } from '../fakes/openocd/fake-board.js';
import { FakeBench, fakeOpenocdPath, fakeProbeRsPath } from '../fakes/openocd/fake-bench.js';
import { firmwareImage, makeElf } from '../support/make-elf.js';

/**
 * The probe backend end to end on the stand-in bench: the real `serialport` binding on a socat
 * pty pair, the stand-in openocd and probe-rs, and the fake board behind them. Each failure the
 * issue names is produced the way a real bench produces it.
 */
const catalog = loadBoardCatalog();
const f4 = catalog.find((b) => b.id === 'stm32f4-discovery')!;
const pico = catalog.find((b) => b.id === 'pico')!;
const f4Image = firmwareImage(makeElf({ segments: [{ paddr: 0x0800_0000, data: new Uint8Array(128).fill(1) }] }));
const picoImage = firmwareImage(makeElf({ segments: [{ paddr: 0x1000_0000, data: new Uint8Array(128).fill(2) }] }));
const decode = (chunks: Array<{ bytes: Uint8Array }>) => chunks.map((c) => new TextDecoder().decode(c.bytes)).join('');

const fake = new FakeBench();
let bench: BenchFile;
beforeAll(async () => {
  const healthElf = path.join(fake.dir, 'health-f4.elf');
  writeFileSync(healthElf, f4Image.bytes);
  bench = await fake.start(
    [
      { boardId: 'stm32f4-discovery', kind: 'openocd', healthCheck: { elf: healthElf, expect: 'boot sha256=[0-9a-f]{16}', withinSeconds: 6 } },
      { boardId: 'pico', kind: 'probe-rs' },
    ],
    { quarantineAfterFailures: 3 },
  );
});
afterAll(() => fake.stop());
beforeEach(() => {
  fake.setBehaviour('stm32f4-discovery', 'ok');
  fake.setBehaviour('pico', 'ok');
});

const newBackend = (clock: Clock = systemClock) =>
  new ProbeBackend({ bench, clock, openocdPath: fakeOpenocdPath, probeRsPath: fakeProbeRsPath, toolEnv: fake.toolEnv });

/**
 * A fake clock (never installed globally) that tells the test when a timer of a given delay is
 * set, so the test advances time only once the wait it means to end has begun: no wall-time race
 * between the tools' start-up (slow on a loaded machine) and the wait.
 */
function announcingFakeClock() {
  const fakeTime = createClock(Date.UTC(2026, 0, 1));
  const inner = clockFromFakeTimers(fakeTime);
  const waiters = new Map<number, Array<() => void>>();
  const clock: Clock = {
    ...inner,
    setTimeout: (fn, delayMs) => {
      const handle = inner.setTimeout(fn, delayMs);
      for (const announce of waiters.get(delayMs) ?? []) announce();
      waiters.delete(delayMs);
      return handle;
    },
  };
  const timerSet = (delayMs: number) => new Promise<void>((resolve) => waiters.set(delayMs, [...(waiters.get(delayMs) ?? []), resolve]));
  return { clock, fakeTime, timerSet };
}

async function failureOf(promise: Promise<unknown>): Promise<BackendError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BackendError);
  return error as BackendError;
}

describe('probe backend on the stand-in bench', () => {
  it('runs a job through runFirmware: flash, capture before release, the boot line first', async () => {
    // The 3 s capture runs on a fake clock that moves only once the boot line has arrived and the
    // capture's deadline is set: on a loaded machine the fake board may take longer than 3 real
    // seconds to print it.
    const { clock, fakeTime, timerSet } = announcingFakeClock();
    const bootLine = fakeBootLine(f4Image.sha256);
    const seen: Array<{ bytes: Uint8Array }> = [];
    let booted!: () => void;
    const bootLineArrived = new Promise<void>((resolve) => (booted = resolve));
    const captureStarted = timerSet(3_000);
    const running = runFirmware(newBackend(clock), f4, f4Image, {
      clock,
      uartSeconds: 3,
      maxUartBytes: 1 << 16,
      onUart: (chunk) => {
        seen.push(chunk);
        if (decode(seen).includes(bootLine)) booted();
      },
    });
    await Promise.race([Promise.all([captureStarted, bootLineArrived]), running]);
    await fakeTime.tickAsync(3_000);
    const run = await running;
    expect(run.timeBase).toBe('wall');
    expect(decode(run.uart).startsWith(bootLine)).toBe(true);
    expect(run.stop).toMatchObject({ reason: 'elapsed' });
    expect(fake.invocations('stm32f4-discovery').slice(-2)).toEqual([
      expect.stringMatching(/adapter serial FAKE-STM32F4-DISCOVERY .*program \{.*\.elf\} verify exit$/),
      expect.stringMatching(/-c init; reset run; shutdown$/),
    ]);
  });

  it('sends bytes to the firmware (the fake firmware echoes them)', async () => {
    const device = await newBackend().open(pico);
    try {
      const chunks: Array<{ bytes: Uint8Array }> = [];
      device.onUart((c) => chunks.push(c));
      await device.flash(picoImage);
      await device.run(5e9, { until: () => decode(chunks).includes('boot') });
      await device.writeUart(new TextEncoder().encode('ping-from-host\n'));
      await device.run(15e9, { until: () => decode(chunks).includes('ping-from-host') });
      expect(decode(chunks)).toContain('ping-from-host');
    } finally {
      await device.close();
    }
  });

  it.each([
    ['openocd', 'stm32f4-discovery', f4, f4Image, /Error: open failed/],
    ['probe-rs', 'pico', pico, picoImage, /Probe was not found/],
  ] as const)('%s: an unplugged probe is probe-not-found, quoting exit status and output', async (_tool, boardId, board, image, line) => {
    fake.unplugProbe(boardId);
    try {
      const device = await newBackend().open(board);
      try {
        const error = await failureOf(device.flash(image));
        expect(error.kind).toBe('probe-not-found');
        expect(error.exitCode).toBe(1);
        expect(error.message).toMatch(/exit status 1/);
        expect(error.message).toMatch(line);
      } finally {
        await device.close();
      }
    } finally {
      fake.plugProbe(boardId);
    }
  });

  it.each([
    ['program-fail', 'stm32f4-discovery', f4, f4Image, /\*\* Programming Failed \*\*/],
    ['verify-fail', 'stm32f4-discovery', f4, f4Image, /\*\* Verify Failed \*\*/],
    ['program-fail', 'pico', pico, picoImage, /Failed to program page/],
    ['verify-fail', 'pico', pico, picoImage, /Verification failed/],
  ] as const)('%s on %s is flash-failed with the tool output', async (behaviour, boardId, board, image, line) => {
    fake.setBehaviour(boardId, behaviour);
    const device = await newBackend().open(board);
    try {
      const error = await failureOf(device.flash(image));
      expect(error.kind).toBe('flash-failed');
      expect(error.outputTail).toMatch(line);
    } finally {
      await device.close();
    }
  });

  it.each([
    ['stm32f4-discovery', f4, f4Image],
    ['pico', pico, picoImage],
  ] as const)('a target that will not reset is reset-failed (%s)', async (boardId, board, image) => {
    const device = await newBackend().open(board);
    try {
      await device.flash(image);
      fake.setBehaviour(boardId, 'reset-fail');
      const error = await failureOf(device.run(20e9));
      expect(error.kind).toBe('reset-failed');
      expect(error.message).toMatch(/did not reset \(exit status 1\)/);
    } finally {
      await device.close();
    }
  });

  it('a tool that ignores SIGTERM is killed and reported as timeout', async () => {
    // The tool's deadline and kill grace run on a fake clock, moved once the tool has started
    // hanging: on a loaded machine it may need more than 1.5 real seconds just to start.
    const { clock, fakeTime, timerSet } = announcingFakeClock();
    const quick = new ProbeBackend({
      bench: { ...bench, boards: { pico: { ...bench.boards.pico!, timeouts: { ...bench.boards.pico!.timeouts, flashMs: 1_500, killGraceMs: 300 } } } },
      clock,
      probeRsPath: fakeProbeRsPath,
      toolEnv: fake.toolEnv,
    });
    fake.setBehaviour('pico', 'hang-ignore-term');
    const device = await quick.open(pico);
    try {
      const deadlineSet = timerSet(1_500);
      const flashing = failureOf(device.flash(picoImage));
      await deadlineSet;
      // The stand-in logs `hang pid=N` once it hangs; its log is a file, so look until it is there.
      while (!fake.invocations('pico').at(-1)?.startsWith('hang pid=')) await sleepMs(20);
      const killScheduled = timerSet(300);
      await fakeTime.tickAsync(1_500);
      await killScheduled;
      await fakeTime.tickAsync(300);
      const error = await flashing;
      expect(error.kind).toBe('timeout');
      expect(error.message).toMatch(/within 1500 ms and was killed/);
      const pid = Number(/hang pid=(\d+)/.exec(fake.invocations('pico').at(-1)!)![1]);
      expect(() => process.kill(pid, 0)).toThrow();
    } finally {
      await device.close();
    }
  });

  it('a serial device that vanishes mid-capture ends the run as serial-lost', async () => {
    const local = new FakeBench();
    try {
      const localBench = await local.start([{ boardId: 'pico', kind: 'probe-rs' }]);
      const backend = new ProbeBackend({ bench: localBench, clock: systemClock, probeRsPath: fakeProbeRsPath, toolEnv: local.toolEnv });
      const device = await backend.open(pico);
      try {
        const chunks: Array<{ bytes: Uint8Array }> = [];
        device.onUart((c) => {
          chunks.push(c);
          if (chunks.length === 1) local.unplugSerial('pico');
        });
        await device.flash(picoImage);
        const error = await failureOf(device.run(60e9));
        expect(error.kind).toBe('serial-lost');
        expect(error.message).toContain(local.hostEnd('pico'));
        expect((await backend.health('pico')).consecutiveFailures).toBe(1);
        await expect(device.writeUart(new Uint8Array([1]))).rejects.toMatchObject({ kind: 'serial-lost' });
      } finally {
        await device.close();
      }
    } finally {
      await local.stop();
    }
  });

  it('quarantines a board after 3 failed jobs and a passing health check puts it back', async () => {
    const backend = newBackend();
    fake.setBehaviour('stm32f4-discovery', 'verify-fail');
    for (let i = 0; i < 3; i++) {
      await expect(runFirmware(backend, f4, f4Image, { clock: systemClock, uartSeconds: 1, maxUartBytes: 1024 })).rejects.toMatchObject({
        kind: 'flash-failed',
      });
    }
    const availability = await backend.availability(f4);
    expect(availability).toMatchObject({ available: false });
    expect(availability.available === false && availability.reason).toMatch(
      /^quarantined after 3 consecutive infrastructure failures: flash on stm32f4-discovery .*flash or verify failed \(exit status 1\)/,
    );

    // Still broken: the health check fails and the board stays out.
    const failed = await backend.healthCheck('stm32f4-discovery');
    expect(failed).toMatchObject({ passed: false, reason: expect.stringMatching(/flash or verify failed/) });
    expect((await backend.availability(f4)).available).toBe(false);

    fake.setBehaviour('stm32f4-discovery', 'ok');
    const passed = await backend.healthCheck('stm32f4-discovery');
    expect(passed).toMatchObject({ passed: true, uartText: expect.stringContaining(fakeBootLine(f4Image.sha256)) });
    expect(await backend.availability(f4)).toEqual({ available: true });
  });

  it('a health check whose text never appears fails and leaves the board quarantined', async () => {
    // The check's 6 s wait runs on a fake clock, advanced once the wait has started: the test
    // spends no wall time on it and cannot lose a race against slow tools (it timed out at 30 s
    // on a loaded 2-core machine while it slept 6 real seconds).
    // The board starts quarantined as three failed flashes leave it (the test above makes them
    // for real); three more tool runs here would only add start-up time on a loaded machine.
    const { clock, fakeTime, timerSet } = announcingFakeClock();
    const quarantineStore = new InMemoryQuarantineStore();
    let health = await quarantineStore.get('stm32f4-discovery');
    for (let i = 0; i < 3; i++) health = afterFailure(health, 'flash on stm32f4-discovery failed (exit status 1)', 3, clock.nowMs());
    await quarantineStore.put('stm32f4-discovery', health);
    const backend = new ProbeBackend({ bench, clock, quarantineStore, openocdPath: fakeOpenocdPath, probeRsPath: fakeProbeRsPath, toolEnv: fake.toolEnv });
    fake.setBehaviour('stm32f4-discovery', 'silent');
    // The run's deadline is the only 6000 ms timer (tools: 20 s, serial presence checks: 500 ms).
    const waitStarted = timerSet(6_000);
    const checking = backend.healthCheck('stm32f4-discovery');
    // If the check ends before its wait (a flash failure), its answer fails the expectations below.
    await Promise.race([waitStarted, checking]);
    await fakeTime.tickAsync(6_000);
    const result = await checking;
    expect(result).toMatchObject({ passed: false, reason: expect.stringMatching(/did not appear within 6 s/) });
    expect(await backend.availability(f4)).toMatchObject({ available: false, reason: expect.stringMatching(/^quarantined after 3/) });
  });
});
