import { describe, expect, it } from 'vitest';
import { type BenchLimits, defaultBenchLimits, limitFlag, validateBenchLimits } from './bench-limits.js';

const withLimits = (over: Partial<BenchLimits>) => ({ ...defaultBenchLimits, ...over });

describe('validateBenchLimits', () => {
  it('accepts the defaults and limits that admit the spec defaults', () => {
    expect(validateBenchLimits(defaultBenchLimits)).toEqual(defaultBenchLimits);
    expect(() => validateBenchLimits(withLimits({ minIdleSeconds: 90, maxIdleSeconds: 90, maxUartSeconds: 0.8, maxLabelLength: 5 }))).not.toThrow();
  });

  it.each([
    [{ maxIdleSeconds: 5 }, 'invalid bench limits: --min-idle-seconds (10) is above --max-idle-seconds (5)'],
    [{ maxIdleSeconds: 60 }, 'invalid bench limits: the default idle_seconds (90) must lie within --min-idle-seconds (10) and --max-idle-seconds (60)'],
    [{ minIdleSeconds: 120 }, 'invalid bench limits: the default idle_seconds (90) must lie within --min-idle-seconds (120) and --max-idle-seconds (3600)'],
    [{ maxUartSeconds: 0.5 }, 'invalid bench limits: --max-uart-seconds (0.5) is below the default uart_seconds (0.8)'],
    [{ maxLabelLength: 4 }, 'invalid bench limits: --max-label-length (4) is shorter than the default label "agent" (5 characters)'],
    [{ maxQueuedJobsPerBoard: 2.5 }, 'invalid bench limits: --max-queued-jobs-per-board must be a whole number, got 2.5'],
    [{ maxFirmwareBytes: 0 }, 'invalid bench limits: --max-firmware-bytes must be a positive number, got 0'],
    [{ maxUartBytesPerJob: Number.POSITIVE_INFINITY }, 'invalid bench limits: --max-uart-bytes-per-job must be a positive number, got Infinity'],
    [{ minIdleSeconds: Number.NaN }, 'invalid bench limits: --min-idle-seconds must be a positive number, got NaN'],
  ] as Array<[Partial<BenchLimits>, string]>)('refuses %o naming the flag', (over, message) => {
    expect(() => validateBenchLimits(withLimits(over))).toThrow(message);
  });

  it('names every flag as bin/hilbench.ts spells it', () => {
    expect(limitFlag('maxQueuedJobsPerBoard')).toBe('--max-queued-jobs-per-board');
  });
});
