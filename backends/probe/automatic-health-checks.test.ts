import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { AutomaticHealthChecks, type AutomaticCheckOutcome } from './automatic-health-checks.js';

/** The automatic health-check schedule on a fake clock, with a scripted check. */
function setup(results: boolean[], options: { retryAfterMs?: number; maxChecks?: number } = {}) {
  const fake = createClock(0);
  const quarantined = new Set(['f4']);
  const checkedAtMs: number[] = [];
  const events: Array<{ attempt: number; passed: boolean; nextInMs: number | undefined }> = [];
  const checks = new AutomaticHealthChecks({
    clock: clockFromFakeTimers(fake),
    check: async (boardId): Promise<AutomaticCheckOutcome> => {
      checkedAtMs.push(fake.now);
      const passed = results.shift() ?? false;
      if (passed) quarantined.delete(boardId);
      return passed ? { passed } : { passed, reason: 'boot line missing' };
    },
    isQuarantined: async (boardId) => quarantined.has(boardId),
    policy: (boardId) => (boardId === 'f4' ? { retryAfterMs: options.retryAfterMs ?? 60_000, maxChecks: options.maxChecks ?? 3 } : undefined),
    onCheck: (e) => events.push({ attempt: e.attempt, passed: e.outcome.passed, nextInMs: e.nextInMs }),
  });
  return { fake, checks, quarantined, checkedAtMs, events };
}

describe('automatic health checks', () => {
  it('runs the check after the delay, again after each failure, and stops once it passes', async () => {
    const { fake, checks, checkedAtMs, events, quarantined } = setup([false, false, true], { maxChecks: 5 });
    checks.quarantined('f4');
    await fake.tickAsync(59_999);
    expect(checkedAtMs).toEqual([]);
    await fake.tickAsync(1);
    expect(checkedAtMs).toEqual([60_000]);
    await fake.tickAsync(600_000);
    expect(checkedAtMs).toEqual([60_000, 120_000, 180_000]);
    expect(events).toEqual([
      { attempt: 1, passed: false, nextInMs: 60_000 },
      { attempt: 2, passed: false, nextInMs: 60_000 },
      { attempt: 3, passed: true, nextInMs: undefined },
    ]);
    expect(quarantined.has('f4')).toBe(false);
    expect(checks.scheduled('f4')).toBe(false);
  });

  it('is bounded: after maxChecks failed checks the board waits for an administrator', async () => {
    const { fake, checks, checkedAtMs, events } = setup([], { maxChecks: 2 });
    checks.quarantined('f4');
    await fake.tickAsync(3_600_000);
    expect(checkedAtMs).toEqual([60_000, 120_000]);
    expect(events.at(-1)).toEqual({ attempt: 2, passed: false, nextInMs: undefined });
    // A new quarantine (after an administrator's release and new failures) starts a new series.
    checks.released('f4');
    checks.quarantined('f4');
    await fake.tickAsync(60_000);
    expect(checkedAtMs).toHaveLength(3);
  });

  it("an administrator's release cancels the scheduled check; boards without a policy get none; close stops everything", async () => {
    const { fake, checks, checkedAtMs, quarantined } = setup([]);
    checks.quarantined('f4');
    checks.quarantined('pico');
    expect(checks.scheduled('pico')).toBe(false);
    checks.released('f4');
    await fake.tickAsync(600_000);
    expect(checkedAtMs).toEqual([]);

    // Released behind its back (no released() call): the check sees it and does nothing.
    checks.quarantined('f4');
    quarantined.delete('f4');
    await fake.tickAsync(600_000);
    expect(checkedAtMs).toEqual([]);

    quarantined.add('f4');
    checks.quarantined('f4');
    checks.close();
    await fake.tickAsync(600_000);
    expect(checkedAtMs).toEqual([]);
  });

  it('a check that throws counts as a failed one and is retried', async () => {
    const fake = createClock(0);
    let calls = 0;
    const reasons: string[] = [];
    const checks = new AutomaticHealthChecks({
      clock: clockFromFakeTimers(fake),
      check: async () => {
        calls++;
        throw new Error('board stm32f4-discovery is already open on this bench');
      },
      isQuarantined: async () => true,
      policy: () => ({ retryAfterMs: 1_000, maxChecks: 2 }),
      onCheck: (e) => reasons.push(e.outcome.reason ?? ''),
    });
    checks.quarantined('f4');
    await fake.tickAsync(10_000);
    expect(calls).toBe(2);
    expect(reasons[0]).toMatch(/automatic health check on f4 failed: board stm32f4-discovery is already open/);
  });
});
