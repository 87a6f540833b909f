import { readlinkSync } from 'node:fs';
import os from 'node:os';

/**
 * The nice value of an engine thread. A simulator runs as fast as it can for as long as its job
 * lasts; at 10 the kernel gives the process's main thread (the server's event loop, at 0) about
 * nine times the CPU share of each engine when they compete, so `GET /api/v1/health` stays fast
 * while every simulated instance is busy. Engines still use every core nothing else wants.
 */
export const ENGINE_THREAD_NICE = 10;

/**
 * Lowers the calling thread's priority to `ENGINE_THREAD_NICE`. Linux only: there `setpriority`
 * on a thread id changes that thread alone (found through /proc/thread-self). Elsewhere, or if
 * the kernel refuses, the thread keeps its priority; returns whether it was lowered.
 */
export function lowerThisThreadsPriority(): boolean {
  if (os.platform() !== 'linux') return false;
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(threadId) || threadId <= 0) return false;
    os.setPriority(threadId, Math.max(os.getPriority(threadId), ENGINE_THREAD_NICE));
    return true;
  } catch {
    return false;
  }
}
