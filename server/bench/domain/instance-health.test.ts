import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { SqliteBenchStore } from '../../storage/bench/sqlite-bench-store.js';
import { INSTANCE_QUARANTINE_AFTER_FAILURES, InstanceHealth } from './instance-health.js';

const FLASH_FAILED = { board: 'pico', instance: 'pico.2@w', state: 'failed', failure: { kind: 'flash-failed', message: 'Error: open failed' } } as const;
const RAN = { board: 'pico', instance: 'pico.2@w', state: 'done', failure: null } as const;

function instanceHealth() {
  const store = new SqliteBenchStore(':memory:');
  return { store, health: new InstanceHealth({ clock: clockFromFakeTimers(createClock(1_000)), store }) };
}

// Job ends reach the server concurrently (several workers, several replicas): each is one store
// transaction (decision 0551), so none is computed from a count another one is changing.
describe('InstanceHealth', () => {
  it('counts every one of failures reported at once, and quarantines the instance once', async () => {
    const { health } = instanceHealth();
    const quarantined = await Promise.all(Array.from({ length: INSTANCE_QUARANTINE_AFTER_FAILURES + 1 }, () => health.jobEnded(FLASH_FAILED)));
    expect((await health.get('pico.2@w')).consecutiveFailures, 'failures reported at once lost counts').toBe(INSTANCE_QUARANTINE_AFTER_FAILURES + 1);
    expect(quarantined.filter((record) => record !== undefined)).toHaveLength(1);
  });

  it('does not undo a release that lands while a failure is being counted', async () => {
    const { health } = instanceHealth();
    for (let i = 0; i < INSTANCE_QUARANTINE_AFTER_FAILURES - 1; i++) await health.jobEnded(FLASH_FAILED);
    // One more failure and an administrator's release at once: in either order the instance ends
    // up in service (released after the quarantine, or one failure counted after the release).
    await Promise.all([health.jobEnded(FLASH_FAILED), health.release('pico.2@w')]);
    const after = await health.get('pico.2@w');
    expect(after.quarantine, 'a stale quarantine undid the release').toBeUndefined();
    expect(after.consecutiveFailures).toBeLessThanOrEqual(1);
  });

  it('resets the count after a job that ran, but not a quarantine; touches no row of a healthy instance', async () => {
    const { health, store } = instanceHealth();
    await health.jobEnded(RAN);
    expect(store.database.prepare('SELECT COUNT(*) AS n FROM board_health').get()).toEqual({ n: 0 });
    await health.jobEnded(FLASH_FAILED);
    await health.jobEnded(RAN);
    expect(await health.get('pico.2@w')).toEqual({ consecutiveFailures: 0, lastFailure: undefined, quarantine: undefined });
    for (let i = 0; i < INSTANCE_QUARANTINE_AFTER_FAILURES; i++) await health.jobEnded(FLASH_FAILED);
    await health.jobEnded(RAN);
    expect((await health.get('pico.2@w')).quarantine).toMatchObject({ sinceMs: 1_000 });
  });

  it('does not count a debug job that timed out waiting for its debugger against its instance', async () => {
    const { health } = instanceHealth();
    const timedOut = { ...FLASH_FAILED, failure: { kind: 'timeout', message: 'no debugger connected for 300 s' } } as const;
    for (let i = 0; i < INSTANCE_QUARANTINE_AFTER_FAILURES + 1; i++) await health.jobEnded(timedOut, { debug: true });
    expect(await health.get('pico.2@w')).toEqual({ consecutiveFailures: 0, lastFailure: undefined, quarantine: undefined });
    // Its other infrastructure failures count, and so do an ordinary job's timeouts.
    await health.jobEnded(FLASH_FAILED, { debug: true });
    expect((await health.get('pico.2@w')).consecutiveFailures).toBe(1);
    await health.jobEnded(timedOut);
    const quarantined = await health.jobEnded(timedOut);
    expect(quarantined?.quarantine?.reason).toContain('timeout');
  });
});
