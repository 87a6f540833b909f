import os from 'node:os';
import { SimThread, type SimThreadWatch } from './sim-thread-host.js';

/**
 * Engine threads whose device closed, by entry module and nice value, shared by every `SimBackend` of the
 * process: starting a thread costs a module load (rp2040js, avr8js, the engines), so a lab's
 * jobs and a test file's devices reuse them. At most `os.availableParallelism()` are kept per
 * entry; idle threads do not keep the process alive.
 */
const idleByEntry = new Map<string, SimThread[]>();

const keyOf = (entry: URL, nice: number | undefined) => `${entry.href} nice=${nice ?? 0}`;

/** An idle engine thread for `entry` at `nice`, or a new one, watched by `watch` while its device uses it. */
export async function acquireSimThread(entry: URL, watch: SimThreadWatch, options: { nice?: number } = {}): Promise<SimThread> {
  const idle = idleByEntry.get(keyOf(entry, options.nice));
  for (let thread = idle?.pop(); thread; thread = idle?.pop()) {
    if (thread.unusable) continue;
    thread.watch = watch;
    return thread;
  }
  return SimThread.start(entry, watch, options);
}

/** Takes back a thread whose device closed: kept for the next device unless `end` or enough are idle. */
export function releaseSimThread(thread: SimThread, options: { end: boolean }): void {
  const key = keyOf(thread.entry, thread.nice);
  const idle = idleByEntry.get(key) ?? [];
  idleByEntry.set(key, idle);
  if (options.end || thread.unusable || idle.length >= os.availableParallelism()) thread.terminate();
  else idle.push(thread);
}
