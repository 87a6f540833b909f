import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { DatabaseUnavailableError, StorageFullError } from '../../storage/storage-faults.js';
import { OUTLAST_STORAGE_FAULTS_MS, outlastStorageFaults } from './outlast-storage-faults.js';

const T0 = 1_700_000_000_000;

/** A call that fails with `faults` (one per try, in order) and then answers 'stored'; it records when it was tried. */
function flaky(fake: ReturnType<typeof createClock>, faults: Error[]) {
  const triedAtMs: number[] = [];
  const call = async () => {
    triedAtMs.push(fake.now - T0);
    const fault = faults.shift();
    if (fault) throw fault;
    return 'stored';
  };
  return { call, triedAtMs };
}

describe('outlastStorageFaults', () => {
  it('tries again while the storage is away or full, pauses doubling from half a second to 5 s on the injected clock', async () => {
    const fake = createClock(T0);
    const away = () => new DatabaseUnavailableError('the bench database is away', 1);
    const { call, triedAtMs } = flaky(fake, [away(), away(), new StorageFullError('the disk is full', 60), away(), away(), away()]);
    const retries: number[] = [];
    const answer = outlastStorageFaults(call, { clock: clockFromFakeTimers(fake), onRetry: (_err, pauseMs) => retries.push(pauseMs) });
    await fake.runAllAsync();
    expect(await answer).toBe('stored');
    expect(retries).toEqual([500, 1_000, 2_000, 4_000, 5_000, 5_000]);
    expect(triedAtMs).toEqual([0, 500, 1_500, 3_500, 7_500, 12_500, 17_500]);
  });

  it('passes any other error at once', async () => {
    const fake = createClock(T0);
    const { call, triedAtMs } = flaky(fake, [new Error('job job_1 is done and no longer this worker\'s')]);
    await expect(outlastStorageFaults(call, { clock: clockFromFakeTimers(fake) })).rejects.toThrow('no longer this worker');
    expect(triedAtMs).toEqual([0]);
  });

  it('gives up with the fault once the next pause would end past ten minutes', async () => {
    const fake = createClock(T0);
    const faults = Array.from({ length: 1_000 }, () => new DatabaseUnavailableError('the bench database is away', 1));
    const { call, triedAtMs } = flaky(fake, faults);
    const answer = outlastStorageFaults(call, { clock: clockFromFakeTimers(fake) });
    const settled = answer.then(
      () => 'stored',
      (err: unknown) => err,
    );
    await fake.runAllAsync();
    expect(await settled).toBeInstanceOf(DatabaseUnavailableError);
    expect(triedAtMs.at(-1)).toBeLessThanOrEqual(OUTLAST_STORAGE_FAULTS_MS);
    expect(triedAtMs.at(-1)! + 5_000).toBeGreaterThan(OUTLAST_STORAGE_FAULTS_MS);
  });
});
