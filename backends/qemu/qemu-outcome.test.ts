import { describe, expect, it } from 'vitest';
import { classifyRunExit, startupFailure } from './qemu-outcome.js';

// Output as qemu-system-arm 7.2 prints it (captured from a real locked-up mps2-an385).
const lockupTail = [
  'qemu: fatal: Lockup: can\'t escalate 3 to HardFault (current priority -1)',
  '',
  'R00=00000000 R01=00000000 R02=00000000 R03=00000000',
  'R12=00000000 R13=20001000 R14=fffffff9 R15=fffffff0',
  'XPSR=40000003 -Z-- A handler',
].join('\n');

describe('QEMU exit classification', () => {
  it('turns a Lockup abort into a crash naming the fault and the PC', () => {
    const outcome = classifyRunExit({ exitCode: 134, signal: undefined, stoppedByUs: false }, lockupTail);
    expect(outcome).toEqual({ kind: 'crashed', message: "Lockup: can't escalate 3 to HardFault (current priority -1) at PC=0xfffffff0" });
  });

  it('treats status 134 without the fatal line as a crash too', () => {
    expect(classifyRunExit({ exitCode: 134, signal: undefined, stoppedByUs: false }, '').kind).toBe('crashed');
  });

  it('reports a semihosting exit status as the firmware exit', () => {
    expect(classifyRunExit({ exitCode: 3, signal: undefined, stoppedByUs: false }, 'hello\n')).toEqual({ kind: 'exited', exitCode: 3 });
    expect(classifyRunExit({ exitCode: 0, signal: undefined, stoppedByUs: false }, '')).toEqual({ kind: 'exited', exitCode: 0 });
  });

  it('reports a kernel QEMU could not load after the client connected as bad-image, not as exit 1', () => {
    const outcome = classifyRunExit({ exitCode: 1, signal: undefined, stoppedByUs: false }, "qemu-system-arm: Could not load kernel '/x/fw.elf'");
    expect(outcome.kind === 'error' && outcome.error.kind).toBe('bad-image');
  });

  it('reports an outside kill as an infrastructure error', () => {
    const outcome = classifyRunExit({ exitCode: undefined, signal: 'SIGKILL', stoppedByUs: false }, '');
    expect(outcome.kind).toBe('error');
    expect(outcome.kind === 'error' && outcome.error.kind).toBe('internal');
    expect(outcome.kind === 'error' && outcome.error.isInfrastructure).toBe(true);
  });

  it('maps "Could not load kernel" to bad-image with the status and the tail', () => {
    const tail = "fw.elf: No such file or directory\nqemu-system-arm: Could not load kernel '/tmp/hbq-1/fw.elf'";
    const error = startupFailure({ exitCode: 1, signal: undefined, stoppedByUs: false }, tail);
    expect(error.kind).toBe('bad-image');
    expect(error.exitCode).toBe(1);
    expect(error.outputTail).toBe(tail);
    expect(error.message).toContain("Could not load kernel '/tmp/hbq-1/fw.elf'");
  });

  it('maps an unknown machine to unavailable and anything else to flash-failed', () => {
    expect(startupFailure({ exitCode: 1, signal: undefined, stoppedByUs: false }, "qemu-system-arm: unsupported machine type\nUse -machine help").kind).toBe('unavailable');
    const other = startupFailure({ exitCode: 1, signal: undefined, stoppedByUs: false }, 'qemu-system-arm: -serial foo: bad');
    expect(other.kind).toBe('flash-failed');
    expect(other.message).toContain('status 1');
  });
});
