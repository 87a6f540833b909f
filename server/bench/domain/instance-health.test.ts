import { describe, expect, it } from 'vitest';
import { jobRecord } from '../../../test/contract/bench-store-contract.js';
import type { JobRecord } from '../../storage/bench/bench-store.js';
import { SqliteBenchStore } from '../../storage/bench/sqlite-bench-store.js';
import { countInstanceHealth, INSTANCE_QUARANTINE_AFTER_FAILURES, InstanceHealth, quarantinedBy } from './instance-health.js';

const FLASH_FAILED = jobRecord({ instance: 'pico.2@w', state: 'failed', failure: { kind: 'flash-failed', message: 'Error: open failed' }, finishedAtMs: 1_000 });
const RAN = jobRecord({ instance: 'pico.2@w', state: 'done', finishedAtMs: 1_000 });

/**
 * The rule's change, applied as the store applies it (one transaction holding the instance's row,
 * decision 0551; `finishJob` runs the same step inside its own, decision 0930, which the store
 * contract and the gateway's tests check). Returns the record when this end quarantined it.
 */
function instanceHealth() {
  const store = new SqliteBenchStore(':memory:');
  const health = new InstanceHealth({ store });
  const ended = async (job: JobRecord) => {
    const asked = countInstanceHealth(job);
    return asked && quarantinedBy({ health: { instance: asked.instance, ...(await store.boardHealth.update(asked.instance, asked.change)) } });
  };
  return { store, health, ended };
}

// Job ends reach the server concurrently (several workers, several replicas): each is one store
// transaction (decision 0551), so none is computed from a count another one is changing.
describe('InstanceHealth', () => {
  it('counts every one of failures reported at once, and quarantines the instance once', async () => {
    const { health, ended } = instanceHealth();
    const quarantined = await Promise.all(Array.from({ length: INSTANCE_QUARANTINE_AFTER_FAILURES + 1 }, () => ended(FLASH_FAILED)));
    expect((await health.get('pico.2@w')).consecutiveFailures, 'failures reported at once lost counts').toBe(INSTANCE_QUARANTINE_AFTER_FAILURES + 1);
    expect(quarantined.filter((record) => record !== undefined)).toHaveLength(1);
  });

  it('does not undo a release that lands while a failure is being counted', async () => {
    const { health, ended } = instanceHealth();
    for (let i = 0; i < INSTANCE_QUARANTINE_AFTER_FAILURES - 1; i++) await ended(FLASH_FAILED);
    // One more failure and an administrator's release at once: in either order the instance ends
    // up in service (released after the quarantine, or one failure counted after the release).
    await Promise.all([ended(FLASH_FAILED), health.release('pico.2@w')]);
    const after = await health.get('pico.2@w');
    expect(after.quarantine, 'a stale quarantine undid the release').toBeUndefined();
    expect(after.consecutiveFailures).toBeLessThanOrEqual(1);
  });

  it('resets the count after a job that ran, but not a quarantine (dated at the end that quarantined it); touches no row of a healthy instance', async () => {
    const { health, store, ended } = instanceHealth();
    await ended(RAN);
    expect(store.database.prepare('SELECT COUNT(*) AS n FROM board_health').get()).toEqual({ n: 0 });
    await ended(FLASH_FAILED);
    await ended(RAN);
    expect(await health.get('pico.2@w')).toEqual({ consecutiveFailures: 0, lastFailure: undefined, quarantine: undefined });
    for (let i = 0; i < INSTANCE_QUARANTINE_AFTER_FAILURES; i++) await ended(FLASH_FAILED);
    await ended(RAN);
    expect((await health.get('pico.2@w')).quarantine).toMatchObject({ sinceMs: 1_000 });
  });

  it('counts nothing of a pool of one, of the firmware, an agent or a vanished worker; a debug job counts its timeout not at all', () => {
    expect(countInstanceHealth({ ...FLASH_FAILED, instance: undefined }), "a pool of one keeps its backend's health").toBeUndefined();
    for (const kind of ['bad-image', 'cancelled', 'interrupted'] as const) expect(countInstanceHealth({ ...FLASH_FAILED, failure: { kind, message: 'm' } }), kind).toBeUndefined();
    expect(countInstanceHealth({ ...FLASH_FAILED, failure: { kind: 'timeout', message: 'no debugger connected for 300 s' } })).toMatchObject({ countsUnderDebugger: false });
    expect(countInstanceHealth(FLASH_FAILED)).toMatchObject({ instance: 'pico.2@w', countsUnderDebugger: true });
    expect(countInstanceHealth(RAN)).toMatchObject({ instance: 'pico.2@w', countsUnderDebugger: true });
  });
});
