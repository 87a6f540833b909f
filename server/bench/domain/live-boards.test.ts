import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import type { Availability, Backend } from '../../../backends/backend.js';
import { MockBackend } from '../../../backends/mock/mock-backend.js';
import type { Board } from '../../../boards/board-schema.js';
import { loadBoardCatalog } from '../../../boards/catalog.js';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { resolveBoardBackend } from '../../../harness/board-resolution.js';
import { memoryLogger } from '../../http/logger.js';
import { LiveBoards } from './live-boards.js';

const pico = loadBoardCatalog().find((b) => b.id === 'pico')!;

/** A backend whose answers the test scripts, one pending promise per call. */
function scriptedBackend() {
  const pending: Array<(a: Availability) => void> = [];
  let calls = 0;
  const backend: Backend = {
    name: 'probe',
    availability: () => {
      calls++;
      return new Promise<Availability>((resolve) => pending.push(resolve));
    },
    open: () => new MockBackend().open(pico),
  };
  return { backend, pending, calls: () => calls };
}

function live(backend: Backend, cacheMs = 1_000) {
  const fake = createClock(0);
  const logger = memoryLogger();
  // What a worker would report, asked at once: the test is about the caching around it.
  const resolve = (board: Board) => resolveBoardBackend(board, { probe: backend }, 'probe');
  const boards = new LiveBoards({ clock: clockFromFakeTimers(fake), boards: [pico], resolve, cacheMs, logger });
  return { fake, logger, boards };
}

describe('LiveBoards', () => {
  it('shares one check among concurrent callers and caches it for cacheMs', async () => {
    const scripted = scriptedBackend();
    const { fake, boards } = live(scripted.backend);
    const waiting = Array.from({ length: 5 }, () => boards.get('pico'));
    expect(scripted.calls()).toBe(1);
    scripted.pending.shift()!({ available: true });
    for (const r of await Promise.all(waiting)) expect(r).toMatchObject({ backendName: 'probe', offlineReason: null });
    fake.tick(999);
    await boards.get('pico');
    expect(scripted.calls()).toBe(1);
    fake.tick(1);
    const again = boards.get('pico');
    expect(scripted.calls()).toBe(2);
    scripted.pending.shift()!({ available: false, reason: 'unplugged' });
    expect(await again).toMatchObject({ backend: null, offlineReason: 'unplugged' });
  });

  it('does not let a check started before invalidate() refill the cache with its stale answer', async () => {
    const scripted = scriptedBackend();
    const { boards } = live(scripted.backend);
    const stale = boards.get('pico');
    boards.invalidate('pico');
    const fresh = boards.get('pico');
    expect(scripted.calls()).toBe(2);
    scripted.pending.shift()!({ available: false, reason: 'quarantined (before the release)' });
    scripted.pending.shift()!({ available: true });
    expect(await stale).toMatchObject({ offlineReason: 'quarantined (before the release)' });
    expect(await fresh).toMatchObject({ offlineReason: null });
    // The cache holds the answer of the check that started after the invalidation.
    expect(await boards.get('pico')).toMatchObject({ offlineReason: null });
    expect(scripted.calls()).toBe(2);
  });

  it('turns a check that throws synchronously into an offline board with the error, and logs changes once', async () => {
    let mode: 'throw' | 'ok' = 'throw';
    const backend: Backend = {
      name: 'probe',
      availability: (board: Board) => {
        if (mode === 'throw') throw new Error(`no udev for ${board.id}`);
        return Promise.resolve({ available: true });
      },
      open: () => new MockBackend().open(pico),
    };
    const { fake, logger, boards } = live(backend);
    const reason = 'the probe backend failed its availability check: no udev for pico';
    expect(await boards.get('pico')).toMatchObject({ backend: null, offlineReason: reason });
    fake.tick(1_000);
    await boards.get('pico');
    mode = 'ok';
    fake.tick(1_000);
    expect(await boards.get('pico')).toMatchObject({ backend, offlineReason: null });
    expect(logger.lines).toEqual([`warn: board pico is offline: ${reason}`, 'info: board pico is back online on probe']);
    expect(boards.lastKnown('pico')).toMatchObject({ offlineReason: null });
  });

  it('answers only for boards of its catalog', async () => {
    const { boards } = live(new MockBackend());
    expect(boards.board('nope')).toBeUndefined();
    await expect(boards.get('nope')).rejects.toThrow(/board nope is not in this bench's catalog/);
    expect(boards.ids).toEqual(['pico']);
  });
});
