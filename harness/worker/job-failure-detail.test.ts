import { describe, expect, it } from 'vitest';
import { BackendError } from '../../backends/backend.js';
import { toolFailure } from '../../backends/probe/probe-commands.js';
import { startupFailure } from '../../backends/qemu/qemu-outcome.js';
import { jobFailureDetail } from './job-failure-detail.js';

const occurrences = (text: string, part: string) => text.split(part).length - 1;

describe('jobFailureDetail', () => {
  it('appends the exit code and output tail a backend only set as fields (the mock)', () => {
    const err = new BackendError('flash-failed', 'mock flash failed (injected fault flash-fail)', { exitCode: 1, outputTail: '** Programming Failed ** (mock)' });
    expect(jobFailureDetail(err)).toBe('mock flash failed (injected fault flash-fail); exit code 1; output: ** Programming Failed ** (mock)');
  });

  it('does not repeat the exit status and output the probe already quotes in its message', () => {
    const output = 'Open On-Chip Debugger 0.12.0\nError: ** Programming Failed **\nshutdown command invoked';
    const err = toolFailure('flash', 'nucleo-f411re', { command: 'openocd -f board.cfg', exitCode: 1, exitSignal: null, output, stopped: undefined }, 30_000)!;
    expect(err.message).toContain('exit status 1');
    const detail = jobFailureDetail(err);
    expect(detail).toBe(err.message);
    expect(occurrences(detail, '** Programming Failed **')).toBe(1);
    expect(detail).not.toContain('exit code 1');
  });

  it('keeps a QEMU startup failure to one status and adds the output it did not quote', () => {
    const err = startupFailure({ exitCode: 1, signal: undefined, stoppedByUs: false }, 'qemu-system-arm: -kernel fw.elf: some startup problem');
    const detail = jobFailureDetail(err);
    expect(detail).toBe(`${err.message}; output: qemu-system-arm: -kernel fw.elf: some startup problem`);
    expect(detail).not.toContain('exit code 1');
  });

  it('adds the exit code when the message names a different number', () => {
    const err = new BackendError('internal', 'step 12 failed', { exitCode: 2 });
    expect(jobFailureDetail(err)).toBe('step 12 failed; exit code 2');
  });

  it('is the bare message when there is neither exit code nor output', () => {
    expect(jobFailureDetail(new BackendError('bad-image', 'not an ELF file'))).toBe('not an ELF file');
  });
});
