import { readlinkSync } from 'node:fs';
import os from 'node:os';

/**
 * Lowers the calling thread's priority to `nice` (0..19; an engine thread's, `engineThreadNice`).
 * Linux only: there `setpriority` on a thread id changes that thread alone (found through
 * /proc/thread-self). Elsewhere, or if the kernel refuses, the thread keeps its priority;
 * returns whether it was lowered.
 */
export function lowerThisThreadsPriority(nice: number): boolean {
  if (os.platform() !== 'linux') return false;
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(threadId) || threadId <= 0) return false;
    os.setPriority(threadId, Math.max(os.getPriority(threadId), nice));
    return true;
  } catch {
    return false;
  }
}
