import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import type { Backend } from '../../backends/backend.js';
import { BackendError } from '../../backends/backend.js';
import { type BenchTestApp, startBenchTestApp, TEST_START_MS } from '../support/bench-test-app.js';
import { benchClient } from './every-board-bench-client.js';

/**
 * A backend's availability check may throw anything, not only an `Error` (a rejected promise
 * with a string, a plugin throwing `{code}`). The board must still be offline with a reason that
 * says what was thrown. Today `harness/board-resolution.ts` (`tryBackend`) formats
 * `(err as Error).message`, which is `undefined` for these, so the reason reads "…failed its
 * availability check: undefined". Fix: `err instanceof Error ? err.message : String(err)` (or
 * `JSON.stringify` for plain objects).
 */

let app: BenchTestApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

function throwing(value: unknown): Backend {
  return {
    name: 'qemu',
    availability: () => Promise.reject(value),
    open: async (board) => {
      throw new BackendError('unavailable', `cannot open ${board.id} (test backend)`);
    },
  };
}

describe('an availability check that throws something other than an Error', () => {
  it('makes the board offline with what was thrown in the reason', async () => {
    const fake = createClock(TEST_START_MS);
    app = await startBenchTestApp({ fake, backend: 'qemu', backends: { qemu: throwing('qemu-system-arm -M help timed out') } });
    const board = (await benchClient(app.url).boards()).find((b) => b.id === 'mps2-an385')!;
    expect(board.status).toBe('offline');
    expect(board.offline_reason).toContain('the qemu backend failed its availability check');
    expect(board.offline_reason).toContain('qemu-system-arm -M help timed out');
    expect(board.offline_reason).not.toContain('undefined');
  });
});
