import { parentPort } from 'node:worker_threads';

/**
 * A fake vote writer thread entry for tests of `VoteWriter`'s watchdog: it says it is ready, then
 * never answers anything, as a thread stuck in a loop or a lock would.
 */
parentPort?.postMessage({ type: 'ready' });
parentPort?.on('message', () => {});
