import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { T0 } from '../../../test/contract/bench-store-contract.js';
import { WORKERS_CHANGED_ID } from '../../storage/bench/session-queue-store.js';
import { SqliteBenchStore } from '../../storage/bench/sqlite-bench-store.js';
import { rosterCacheMs, WorkerRoster } from './worker-roster.js';

async function setUp(cacheMs = 5_000) {
  const fake = createClock(T0);
  const store = new SqliteBenchStore(':memory:');
  let reads = 0;
  const list = store.workers.list.bind(store.workers);
  store.workers.list = async () => {
    reads += 1;
    return list();
  };
  const roster = new WorkerRoster({ clock: clockFromFakeTimers(fake), store, cacheMs });
  await store.workers.insert({ workerId: 'w1', label: 'one', tokenSha256: '1'.repeat(64), createdAtMs: T0 });
  return { fake, store, roster, reads: () => reads };
}

describe('WorkerRoster', () => {
  it('reads the workers once for its cache time on the injected clock, shares a read in flight, and reads again once the time is up', async () => {
    const { fake, roster, reads } = await setUp();
    const [a, b] = await Promise.all([roster.list(), roster.list()]);
    expect(a.map((w) => w.workerId)).toEqual(['w1']);
    expect(b).toEqual(a);
    expect(reads()).toBe(1);
    fake.tick(4_999);
    await roster.list();
    expect(reads()).toBe(1);
    fake.tick(1);
    await roster.list();
    expect(reads()).toBe(2);
  });

  it('reads again at once after a report through this process, and a read begun before it fills no cache', async () => {
    const { store, roster, reads } = await setUp();
    const before = roster.list();
    await store.workers.heardFrom('w1', { nowMs: T0, boards: [{ board: 'pico', backend: 'mock', available: true, reason: null }] });
    roster.invalidate();
    await before;
    expect((await roster.list())[0]!.boards.map((b) => b.board)).toEqual(['pico']);
    expect(reads()).toBe(2);
    await roster.list();
    expect(reads()).toBe(2);
  });

  it('hands out copies (a caller that changes one changes nothing kept), and keeps no failed read', async () => {
    const { store, roster, reads } = await setUp();
    (await roster.list())[0]!.label = 'changed';
    expect((await roster.list())[0]!.label).toBe('one');
    roster.invalidate();
    const list = store.workers.list;
    store.workers.list = async () => {
      throw new Error('database away');
    };
    await expect(roster.list()).rejects.toThrow('database away');
    store.workers.list = list;
    expect((await roster.list()).map((w) => w.workerId)).toEqual(['w1']);
    expect(reads()).toBe(2);
  });

  it('keeps a cached last heartbeat plus one more heartbeat inside the offline window', () => {
    expect(rosterCacheMs({ availabilityCacheMs: 5_000, heartbeatMs: 5_000, offlineAfterMs: 15_000 })).toBe(5_000);
    expect(rosterCacheMs({ availabilityCacheMs: 5_000, heartbeatMs: 1_000, offlineAfterMs: 3_000 })).toBe(1_000);
    expect(rosterCacheMs({ availabilityCacheMs: 0, heartbeatMs: 5_000, offlineAfterMs: 15_000 })).toBe(0);
    expect(rosterCacheMs({ availabilityCacheMs: 5_000, heartbeatMs: 5_000, offlineAfterMs: 4_000 })).toBe(0);
  });
  it("reads again when the store reports a worker changed on any replica or its hearing was lost, not for a queue's change, and stops hearing once closed", async () => {
    const { roster: plain, store, reads } = await setUp();
    plain.close();
    let tell: (id?: string) => void = () => undefined;
    let listening = 0;
    const changes = {
      onChange(listener: (id?: string) => void) {
        tell = listener;
        listening += 1;
        return () => void (listening -= 1);
      },
    };
    const roster = new WorkerRoster({ clock: clockFromFakeTimers(createClock(T0)), store, cacheMs: 5_000, changes });
    expect(listening).toBe(1);
    await roster.list();
    tell('pico');
    tell('job:job_1');
    await roster.list();
    expect(reads()).toBe(1);
    tell(WORKERS_CHANGED_ID);
    await roster.list();
    expect(reads()).toBe(2);
    tell(undefined);
    await roster.list();
    expect(reads()).toBe(3);
    roster.close();
    expect(listening).toBe(0);
  });
});
