import { BackendError } from '../backend.js';
import type { EmulatorExit } from '../process/emulator-process.js';

/**
 * What a qemu-system-arm exit means. QEMU 7.2 facts (docs/backends/qemu.md):
 * - a locked-up Cortex-M prints `qemu: fatal: Lockup: can't escalate 3 to HardFault ...` plus a
 *   register dump and aborts (status 134 = 128 + SIGABRT);
 * - with `-semihosting-config enable=on,target=native`, SYS_EXIT / SYS_EXIT_EXTENDED ends QEMU
 *   with the firmware's status;
 * - a kernel it cannot load prints `Could not load kernel '<path>'` and exits 1 before listening.
 */
export type QemuRunOutcome =
  | { kind: 'crashed'; message: string }
  | { kind: 'exited'; exitCode: number }
  | { kind: 'error'; error: BackendError };

const SIGABRT_STATUS = 134;

/** Classifies an exit that happened while the firmware was running. */
export function classifyRunExit(exit: EmulatorExit, outputTail: string): QemuRunOutcome {
  // With `wait=on` QEMU blocks for the UART client before it loads the kernel, so a kernel it
  // cannot load ends the process after the run has begun.
  if (/Could not load kernel/.test(outputTail)) return { kind: 'error', error: startupFailure(exit, outputTail) };
  const fatal = /qemu: fatal: (.*)/.exec(outputTail);
  if (fatal || exit.exitCode === SIGABRT_STATUS || exit.signal === 'SIGABRT') {
    const pc = /\bR15=([0-9a-f]{8})/.exec(outputTail);
    const what = fatal?.[1]?.trim() || `qemu-system-arm aborted (status ${exit.exitCode ?? exit.signal})`;
    return { kind: 'crashed', message: pc ? `${what} at PC=0x${pc[1]}` : what };
  }
  if (exit.exitCode !== undefined) return { kind: 'exited', exitCode: exit.exitCode };
  return {
    kind: 'error',
    error: new BackendError('internal', `qemu-system-arm was ended by ${exit.signal ?? 'an unknown cause'} while the firmware ran`, {
      outputTail,
    }),
  };
}

/** The error for a QEMU that exited before it listened for the UART connection. */
export function startupFailure(exit: EmulatorExit, outputTail: string): BackendError {
  const details = { exitCode: exit.exitCode, outputTail };
  const kernel = /Could not load kernel '([^']*)'/.exec(outputTail);
  if (kernel) return new BackendError('bad-image', `qemu-system-arm could not load the firmware as a kernel (${kernel[0]})`, details);
  const machine = /unsupported machine type|machine type .* not found/i.exec(outputTail);
  if (machine) return new BackendError('unavailable', `this qemu-system-arm does not know the board's machine: ${machine[0]}`, details);
  return new BackendError(
    'flash-failed',
    `qemu-system-arm exited with ${exit.exitCode !== undefined ? `status ${exit.exitCode}` : exit.signal} before it was ready`,
    details,
  );
}
