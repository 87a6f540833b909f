import type { Board } from '../../boards/board-schema.js';
import { BackendError } from '../backend.js';

/**
 * The qemu-system-arm command lines hilbench uses, built in one place so the backend and the
 * benchmark (which compares a job's wall time with a direct run of the same ELF) cannot drift.
 * Facts behind each option: /work/shared/design/backends.md and docs/backends/qemu.md.
 */
export const DEFAULT_QEMU_BINARY = 'qemu-system-arm';

export interface QemuCommandOptions {
  /** The qemu-system-arm executable (name on PATH or absolute path). */
  qemuBinary?: string;
  /** `-icount shift=N`: the guest's clock advances 2^N ns per instruction instead of following the host. */
  icountShift?: number;
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
  if (options.icountShift !== undefined) {
    if (!Number.isInteger(options.icountShift) || options.icountShift < 0 || options.icountShift > 10) {
      throw new BackendError('internal', `icountShift must be an integer 0..10, got ${options.icountShift}`);
    }
    args.push('-icount', `shift=${options.icountShift}`);
  }
  args.push('-kernel', kernelPath);
  return args;
}

/**
 * The command the backend runs: serial0 is a unix socket QEMU listens on with `wait=on`, so the
 * guest does not start until hilbench has connected and no byte is lost.
 */
export function qemuBackendCommand(board: Board, kernelPath: string, socketPath: string, options: QemuCommandOptions = {}): QemuCommand {
  // sockaddr_un.sun_path holds 108 bytes including the terminating NUL.
  if (Buffer.byteLength(socketPath) > 107) {
    throw new BackendError('internal', `unix socket path is ${Buffer.byteLength(socketPath)} bytes; the limit is 107: ${socketPath}`);
  }
  if (socketPath.includes(',')) throw new BackendError('internal', `unix socket path must not contain a comma (QEMU option syntax): ${socketPath}`);
  return {
    file: options.qemuBinary ?? DEFAULT_QEMU_BINARY,
    args: commonArgs(board, kernelPath, `unix:${socketPath},server=on,wait=on`, options),
  };
}

/**
 * The equivalent direct run for benchmarks: the same machine, options and kernel, with serial0
 * on stdout (`-serial stdio`). Run it with a wall-clock limit (e.g. `timeout 1`) and compare.
 */
export function qemuDirectCommand(board: Board, kernelPath: string, options: QemuCommandOptions = {}): QemuCommand {
  return { file: options.qemuBinary ?? DEFAULT_QEMU_BINARY, args: commonArgs(board, kernelPath, 'stdio', options) };
}
