import type { Board } from '../../boards/board-schema.js';
import { BackendError } from '../backend.js';

/**
 * The qemu-system-arm command lines hilbench uses, built in one place so the backend and the
 * benchmark (which compares a job's wall time with a direct run of the same ELF) cannot drift.
 * Facts behind each option: docs/backends/qemu.md.
 */
export const DEFAULT_QEMU_BINARY = 'qemu-system-arm';

export interface QemuCommandOptions {
  /** The qemu-system-arm executable (name on PATH or absolute path). */
  qemuBinary?: string;
  /**
   * `-icount shift=N,align=off,sleep=off`: the guest's clock advances 2^N ns per instruction
   * instead of following the host. Default: the board file's `backends.qemu.icount`, else none.
   */
  icountShift?: number;
}

/**
 * The clock the guest's timers follow: the host's (QEMU's default), or the instruction counter
 * (`-icount`). UART timestamps are host time either way (docs/backends/qemu.md).
 */
export type QemuGuestClock = { kind: 'host' } | { kind: 'icount'; shift: number };

/** The guest clock a run of `board` with `options` uses: the option, else the board file's `qemu.icount`. */
export function qemuGuestClock(board: Board, options: QemuCommandOptions = {}): QemuGuestClock {
  const shift = options.icountShift ?? qemuKeysFor(board).icount;
  if (shift === undefined) return { kind: 'host' };
  if (!Number.isInteger(shift) || shift < 0 || shift > 10) {
    throw new BackendError('internal', `icountShift must be an integer 0..10, got ${shift}`);
  }
  return { kind: 'icount', shift };
}

/** The guest clock in words, for job output and logs: `host` or `icount shift=N (2^N ns per instruction)`. */
export function describeQemuGuestClock(clock: QemuGuestClock): string {
  return clock.kind === 'host' ? 'host' : `icount shift=${clock.shift} (${2 ** clock.shift} ns per instruction)`;
}

export interface QemuCommand {
  file: string;
  args: string[];
}

/** The board's `backends.qemu` entry; throws `unavailable` when the board has none. */
export function qemuKeysFor(board: Board): NonNullable<Board['backends']['qemu']> {
  const keys = board.backends.qemu;
  if (!keys) {
    throw new BackendError('unavailable', `board ${board.id} has no backends.qemu entry (no QEMU machine models it)`);
  }
  return keys;
}

/** Where serial0 goes: a listening unix socket (the backend), or the terminal (a direct run). */
export type QemuSerial = { kind: 'unix-server'; socketPath: string } | { kind: 'stdio' };

function commonArgs(board: Board, kernelPath: string, serial: string, options: QemuCommandOptions): string[] {
  const keys = qemuKeysFor(board);
  const args = ['-M', keys.machine];
  if (keys.cpu) args.push('-cpu', keys.cpu);
  // -monitor none: with -nographic the monitor would otherwise be muxed onto the serial port,
  // and a Ctrl-A in the firmware's output would become a monitor escape.
  args.push('-nographic', '-monitor', 'none', '-serial', serial);
  if (keys.semihosting) args.push('-semihosting-config', 'enable=on,target=native');
  const clock = qemuGuestClock(board, options);
  // align=off: never slow the guest down to host speed; sleep=off: an idle guest (WFI) jumps to
  // its next timer deadline instead of waiting for the host clock to get there. Together the
  // guest's time depends on its instructions only (QEMU docs, "-icount").
  if (clock.kind === 'icount') args.push('-icount', `shift=${clock.shift},align=off,sleep=off`);
  args.push('-kernel', kernelPath);
  return args;
}

/**
 * The command the backend runs: serial0 is a unix socket QEMU listens on with `wait=on`, so the
 * guest does not start until hilbench has connected and no byte is lost.
 */
export function qemuBackendCommand(
  board: Board,
  kernelPath: string,
  socketPath: string,
  options: QemuCommandOptions & { gdbSocketPath?: string } = {},
): QemuCommand {
  // sockaddr_un.sun_path holds 108 bytes including the terminating NUL.
  if (Buffer.byteLength(socketPath) > 107) {
    throw new BackendError('internal', `unix socket path is ${Buffer.byteLength(socketPath)} bytes; the limit is 107: ${socketPath}`);
  }
  if (socketPath.includes(',')) throw new BackendError('internal', `unix socket path must not contain a comma (QEMU option syntax): ${socketPath}`);
  const args = commonArgs(board, kernelPath, `unix:${socketPath},server=on,wait=on`, options);
  // For a debugger: -S keeps the CPU stopped at reset (after the UART connects) until GDB
  // continues; -gdb serves QEMU's gdbstub on a second unix socket (docs/debug.md).
  if (options.gdbSocketPath) args.unshift('-S', '-gdb', `unix:${options.gdbSocketPath},server=on,wait=off`);
  return { file: options.qemuBinary ?? DEFAULT_QEMU_BINARY, args };
}

/**
 * The equivalent direct run for benchmarks: the same machine, options and kernel, with serial0
 * on stdout (`-serial stdio`). Run it with a wall-clock limit (e.g. `timeout 1`) and compare.
 */
export function qemuDirectCommand(board: Board, kernelPath: string, options: QemuCommandOptions = {}): QemuCommand {
  return { file: options.qemuBinary ?? DEFAULT_QEMU_BINARY, args: commonArgs(board, kernelPath, 'stdio', options) };
}
