import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from './clock.js';
import { waitUntil, WaitTimeoutError } from './wait.js';

describe('waitUntil', () => {
  it('lets time pass between checks through the given pause, never past the deadline', async () => {
    const fake = createClock(0);
    const clock = clockFromFakeTimers(fake);
    const pauses: number[] = [];
    let checks = 0;
    const error = await waitUntil(clock, () => (++checks, undefined), {
      timeoutMs: 25,
      pollMs: 10,
      describe: 'a value that never comes',
      lastSeen: () => `check ${checks}`,
      pause: async (ms) => {
        pauses.push(ms);
        await fake.tickAsync(ms);
      },
    }).catch((err: unknown) => err);
    expect(pauses).toEqual([10, 10, 5]);
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect((error as Error).message).toBe('timed out after 25 ms waiting for a value that never comes; last seen: "check 4"');
  });

  it('returns the first value a check gives', async () => {
    const fake = createClock(0);
    let checks = 0;
    const value = await waitUntil(clockFromFakeTimers(fake), () => (++checks === 3 ? 'ready' : undefined), {
      timeoutMs: 1_000,
      describe: 'ready',
      pause: (ms) => fake.tickAsync(ms).then(() => undefined),
    });
    expect([value, checks, fake.now]).toEqual(['ready', 3, 20]);
  });
});
