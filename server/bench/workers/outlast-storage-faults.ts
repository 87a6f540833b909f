import { type Clock, sleep } from '../../../core/clock.js';
import { nextPauseMs } from '../../storage/reconnect-backoff.js';
import { StorageFault } from '../../storage/storage-faults.js';

/** How long a report is tried again while the storage is away: as long as a remote worker keeps an outcome (`deliverForMs`). */
export const OUTLAST_STORAGE_FAULTS_MS = 600_000;
/** Pauses between tries (decision 0516): from half a second, doubling, at most 5 s. */
const PAUSES = { firstMs: 500, maxMs: 5_000 };

/**
 * `call`'s answer, tried again while it fails with a `StorageFault` (the database is away, its
 * disk is full), with pauses doubling from half a second to 5 s on the injected clock, for up to
 * `OUTLAST_STORAGE_FAULTS_MS`, as a remote worker retries a report on a 503 or 507. Any other
 * error, and the fault that outlasted the bound, reject at once. `onRetry` hears each fault
 * before its pause (host ms).
 */
export async function outlastStorageFaults<T>(call: () => Promise<T>, deps: { clock: Clock; onRetry?: (err: StorageFault, pauseMs: number) => void }): Promise<T> {
  const giveUpAtMs = deps.clock.nowMs() + OUTLAST_STORAGE_FAULTS_MS;
  for (let pauseMs = nextPauseMs(0, PAUSES); ; pauseMs = nextPauseMs(pauseMs, PAUSES)) {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof StorageFault) || deps.clock.nowMs() + pauseMs > giveUpAtMs) throw err;
      deps.onRetry?.(err, pauseMs);
      await sleep(deps.clock, pauseMs);
    }
  }
}
