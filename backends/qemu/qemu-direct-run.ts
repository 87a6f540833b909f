import type { Board } from '../../boards/board-schema.js';
import type { Clock } from '../../core/clock.js';
import { EmulatorProcess, type EmulatorExit } from '../process/emulator-process.js';
import { type QemuCommandOptions, qemuDirectCommand } from './qemu-command.js';

/** What a direct qemu-system-arm run printed and how long it took, for benchmarks. */
export interface QemuDirectRun {
  /** Host ms from spawn to exit (what `time timeout <s> qemu-system-arm ...` would report). */
  wallMs: number;
  /** serial0 output (QEMU's stdout with `-serial stdio`). */
  uart: Uint8Array;
  exit: EmulatorExit;
  /** Whether the run was ended by the time limit rather than by the firmware (exit, lockup). */
  timedOut: boolean;
}

/**
 * Runs `kernelPath` on the board's QEMU machine the way a person would without hilbench:
 * `qemuDirectCommand` (serial0 on stdout), ended with SIGTERM after `seconds` of host time unless
 * the firmware ends it first. The benchmark compares this with a job's wall time for the same
 * capture (`uartSeconds`).
 */
export async function runQemuDirect(
  board: Board,
  kernelPath: string,
  options: QemuCommandOptions & { seconds: number; clock: Clock },
): Promise<QemuDirectRun> {
  const { clock } = options;
  const command = qemuDirectCommand(board, kernelPath, options);
  const startedMs = clock.nowMs();
  const child = new EmulatorProcess(command.file, command.args, { clock, killGraceMs: 2000 });
  const chunks: Buffer[] = [];
  child.onData((bytes, stream) => {
    if (stream === 'stdout') chunks.push(bytes);
  });
  let timedOut = false;
  const timer = clock.setTimeout(() => {
    timedOut = true;
    void child.stop();
  }, options.seconds * 1000);
  const exit = await child.exited;
  clock.clearTimeout(timer);
  return { wallMs: clock.nowMs() - startedMs, uart: new Uint8Array(Buffer.concat(chunks)), exit, timedOut };
}
