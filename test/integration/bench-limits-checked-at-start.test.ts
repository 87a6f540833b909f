import { describe, expect, it } from 'vitest';
import { startBenchTestApp } from '../support/bench-test-app.js';

/** Bench limits that contradict each other or the spec defaults refuse to start (issue 2). */

describe('limits are checked at start', () => {
  it('refuses to start with --max-idle-seconds 5, naming the flags', async () => {
    await expect(startBenchTestApp({ limits: { maxIdleSeconds: 5 } })).rejects.toThrow(
      'invalid bench limits: --min-idle-seconds (10) is above --max-idle-seconds (5)',
    );
  });

  it('refuses limits that would reject the spec default idle_seconds "90"', async () => {
    await expect(startBenchTestApp({ limits: { minIdleSeconds: 5, maxIdleSeconds: 30 } })).rejects.toThrow(/the default idle_seconds \(90\) must lie within --min-idle-seconds \(5\) and --max-idle-seconds \(30\)/);
  });
});
