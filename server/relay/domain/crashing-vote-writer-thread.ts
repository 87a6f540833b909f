import { parentPort } from 'node:worker_threads';

/**
 * A fake vote writer thread entry for tests of `VoteWriter`'s failure path: it says it is ready,
 * then throws at the first vote, uncaught, which ends the thread as a crash would.
 */
parentPort?.postMessage({ type: 'ready' });
parentPort?.on('message', (message: { type?: string }) => {
  if (message.type === 'vote') throw new Error('a crash in the vote writer thread (a test)');
});
