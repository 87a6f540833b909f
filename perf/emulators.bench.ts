import { readFileSync } from 'node:fs';
import { loadBoardCatalog } from '../boards/catalog.js';
import { loadFirmwareImage } from '../backends/image-check.js';
import { QemuBackend } from '../backends/qemu/qemu-backend.js';
import { runQemuDirect } from '../backends/qemu/qemu-direct-run.js';
import { SimBackend } from '../backends/sim/sim-backend.js';
import { SimDevice } from '../backends/sim/sim-device.js';
import { NANOS_PER_SECOND } from '../backends/backend.js';
import { systemClock } from '../core/clock.js';
import { runFirmware } from '../harness/run-firmware.js';
import { type BenchRow, nowMs, percentile } from './measure.js';

const firmwarePath = (board: string, program: string) => new URL(`../firmware/examples/${board}/${program}.elf`, import.meta.url);

/**
 * The sim backend's speed: simulated instructions per host second, and simulated time per
 * host time (above 1: faster than the real chip), running each board's hello firmware.
 */
export async function runSimBench(options: { simulatedSeconds?: number } = {}): Promise<BenchRow[]> {
  const simulatedSeconds = options.simulatedSeconds ?? 2;
  const boards = loadBoardCatalog();
  const backend = new SimBackend({ clock: systemClock, onUnmodelled: () => {} });
  const rows: BenchRow[] = [];
  for (const id of ['pico', 'uno']) {
    const board = boards.find((b) => b.id === id)!;
    const device = await backend.open(board);
    try {
      await device.flash(loadFirmwareImage(new Uint8Array(readFileSync(firmwarePath(id, 'hello')))));
      const t0 = nowMs();
      await device.run(simulatedSeconds * NANOS_PER_SECOND);
      const hostMs = nowMs() - t0;
      if (!(device instanceof SimDevice)) throw new Error('the sim backend returned a device that is not a SimDevice');
      const stats = device.stats;
      rows.push(
        {
          name: `sim ${id}: instructions per second`,
          value: stats.instructions / (hostMs / 1000) / 1e6,
          unit: 'M instr/s',
          note: `hello firmware, ${simulatedSeconds} s simulated, core at ${(stats.coreClockHz ?? board.mcu.clockHz) / 1e6} MHz; ${((100 * stats.sleptNanos) / stats.simulatedNanos).toFixed(0)} % of it asleep (skipped)`,
        },
        {
          name: `sim ${id}: simulated time / host time`,
          value: stats.simulatedNanos / 1e6 / hostMs,
          unit: 'x real time',
          note: '> 1 is faster than the chip',
        },
      );
    } finally {
      await device.close();
    }
  }
  return rows;
}

/**
 * QEMU overhead: a job's wall time through the backend (spawn, wait=on socket, connect, capture
 * `captureSeconds`, stop) versus a direct `qemu-system-arm -serial stdio` run of the same ELF
 * killed after the same capture time.
 */
export async function runQemuBench(options: { captureSeconds?: number; repeats?: number; board?: string } = {}): Promise<BenchRow[]> {
  const captureSeconds = options.captureSeconds ?? 1;
  const repeats = options.repeats ?? 5;
  const boardId = options.board ?? 'mps2-an385';
  const board = loadBoardCatalog().find((b) => b.id === boardId)!;
  const backend = new QemuBackend({ clock: systemClock });
  const availability = await backend.availability(board);
  if (!availability.available) {
    return [{ name: `qemu ${boardId}: skipped`, value: Number.NaN, unit: '', note: availability.reason }];
  }
  const kernel = firmwarePath(boardId, 'hello').pathname;
  const image = loadFirmwareImage(new Uint8Array(readFileSync(kernel)));
  const jobMs: number[] = [];
  const directMs: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = nowMs();
    await runFirmware(backend, board, image, { clock: systemClock, uartSeconds: captureSeconds, maxUartBytes: 1 << 20 });
    jobMs.push(nowMs() - t0);

    const t1 = nowMs();
    const directRun = await runQemuDirect(board, kernel, { seconds: captureSeconds, clock: systemClock });
    // An exit with neither status nor signal: qemu-system-arm never started (its reason is in the output).
    if (directRun.exit.exitCode === undefined && directRun.exit.signal === undefined) {
      throw new Error(`the direct qemu-system-arm run of ${kernel} did not start`);
    }
    directMs.push(nowMs() - t1);
  }
  const job = percentile(jobMs, 50);
  const direct = percentile(directMs, 50);
  return [
    { name: `qemu ${boardId}: job wall time, median`, value: job, unit: 'ms', note: `${captureSeconds} s capture, ${repeats} runs, through QemuBackend` },
    { name: `qemu ${boardId}: direct qemu-system-arm, median`, value: direct, unit: 'ms', note: 'same ELF, -serial stdio, SIGTERM after the capture time' },
    { name: `qemu ${boardId}: overhead ratio`, value: job / direct, unit: 'x', note: 'job / direct' },
  ];
}
