import { SimThread, type SimThreadWatch } from './sim-thread-host.js';

/**
 * Engine threads whose device closed, by entry module and nice value, shared by every
 * `SimBackend` of the process: starting a thread costs a module load (rp2040js, avr8js, the
 * engines) and a cold JIT, so a lab's jobs and a test file's devices reuse them. As many are kept
 * as were ever in use at once for that key, so a steady load never starts a thread again; idle
 * threads do not keep the process alive.
 */
const pools = new Map<string, { idle: SimThread[]; inUse: number; peak: number }>();

const keyOf = (entry: URL, nice: number | undefined) => `${entry.href} nice=${nice ?? 0}`;

function poolOf(key: string) {
  let pool = pools.get(key);
  if (!pool) pools.set(key, (pool = { idle: [], inUse: 0, peak: 0 }));
  return pool;
}

/** An idle engine thread for `entry` at `nice`, or a new one, watched by `watch` while its device uses it. */
export async function acquireSimThread(entry: URL, watch: SimThreadWatch, options: { nice?: number } = {}): Promise<SimThread> {
  const pool = poolOf(keyOf(entry, options.nice));
  pool.inUse++;
  pool.peak = Math.max(pool.peak, pool.inUse);
  for (let thread = pool.idle.pop(); thread; thread = pool.idle.pop()) {
    if (thread.unusable) continue;
    thread.watch = watch;
    return thread;
  }
  try {
    return await SimThread.start(entry, watch, options);
  } catch (err) {
    pool.inUse--;
    throw err;
  }
}

/** Takes back a thread whose device closed: kept for the next device unless `end`, or it failed, or the pool has its peak. */
export function releaseSimThread(thread: SimThread, options: { end: boolean }): void {
  const pool = poolOf(keyOf(thread.entry, thread.nice));
  pool.inUse--;
  if (options.end || thread.unusable || pool.idle.length + pool.inUse >= pool.peak) thread.terminate();
  else pool.idle.push(thread);
}
