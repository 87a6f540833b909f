import os from 'node:os';
import { SimThread, type SimThreadWatch } from './sim-thread-host.js';

/**
 * Engine threads whose device closed, by entry module, shared by every `SimBackend` of the
 * process: starting a thread costs a module load (rp2040js, avr8js, the engines), so a lab's
 * jobs and a test file's devices reuse them. At most `os.availableParallelism()` are kept per
 * entry; idle threads do not keep the process alive.
 */
const idleByEntry = new Map<string, SimThread[]>();

/** An idle engine thread for `entry`, or a new one, watched by `watch` while its device uses it. */
export async function acquireSimThread(entry: URL, watch: SimThreadWatch): Promise<SimThread> {
  const idle = idleByEntry.get(entry.href);
  for (let thread = idle?.pop(); thread; thread = idle?.pop()) {
    if (thread.unusable) continue;
    thread.watch = watch;
    return thread;
  }
  return SimThread.start(entry, watch);
}

/** Takes back a thread whose device closed: kept for the next device unless `end` or enough are idle. */
export function releaseSimThread(thread: SimThread, options: { end: boolean }): void {
  const idle = idleByEntry.get(thread.entry.href) ?? [];
  idleByEntry.set(thread.entry.href, idle);
  if (options.end || thread.unusable || idle.length >= os.availableParallelism()) thread.terminate();
  else idle.push(thread);
}
