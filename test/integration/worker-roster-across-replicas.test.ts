import { createClock } from '@sinonjs/fake-timers';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { WorkerRoster } from '../../server/bench/workers/worker-roster.js';
import type { PostgresBenchStore } from '../../server/storage/bench/postgres/postgres-bench-store.js';
import { WORKERS_CHANGED_ID } from '../../server/storage/bench/session-queue-store.js';
import { T0 } from '../contract/bench-store-contract.js';
import { until } from '../support/hilbench-processes.js';
import { pgConnection } from '../../server/storage/postgres/pg-pool.js';
import { postgresBenchStores } from '../support/postgres-bench-stores.js';

/**
 * A worker revoked, added or reporting other boards through replica A reaches replica B's roster
 * by the database's signal (decision 0860, PostgreSQL migration 7), not after its cache time: B's
 * roster caches for an hour on a clock that never moves, so only that signal can make it read again.
 */

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Two stores on one fresh database, as two replicas, and B's roster caching for an hour on a clock that never moves. */
async function twoReplicas() {
  const clock = clockFromFakeTimers(createClock(T0));
  const { stores, url, close } = await postgresBenchStores(2, { clock });
  cleanups.push(close);
  const [a, b] = stores as [PostgresBenchStore, PostgresBenchStore];
  return { a, b, url, roster: new WorkerRoster({ clock, store: b, cacheMs: 3_600_000, changes: b.sessionQueue }) };
}

/** A payload no queue, pool or job has (a colon), sent on the bench's channel after a heartbeat to mark its place. */
const SENTINEL = 'test:sentinel';

async function notify(url: string, payload: string) {
  const client = new pg.Client(pgConnection(url));
  await client.connect();
  try {
    await client.query("SELECT pg_notify('hilbench_session_queue', $1)", [payload]);
  } finally {
    await client.end();
  }
}

const pico = [{ board: 'pico', backend: 'sim', available: true, reason: null }];

describe("a replica's roster of workers", () => {
  it('reads again when a worker is added, reports other boards or is revoked through another replica, and not on a heartbeat that reports the same', { timeout: 60_000 }, async () => {
    const { a, b, url, roster } = await twoReplicas();
    cleanups.push(async () => roster.close());
    const heard: string[] = [];
    let sentinels = 0;
    const stopHearing = b.sessionQueue.onChange((id) => (id === WORKERS_CHANGED_ID ? heard.push(id) : id === SENTINEL && sentinels++));
    cleanups.push(async () => stopHearing());
    await b.sessionQueue.listening();
    const workerIds = async () => (await roster.list()).map((w) => `${w.workerId}${w.revokedAtMs === null ? '' : ' (revoked)'}:${w.boards.map((r) => r.board).join(',')}`);
    expect(await workerIds()).toEqual([]);

    await a.workers.insert({ workerId: 'w1', label: 'one', tokenSha256: '1'.repeat(64), createdAtMs: T0 });
    await until('replica B to hear of the worker added through A', () => heard.length === 1, 20_000);
    expect(await workerIds()).toEqual(['w1:']);

    await a.workers.heardFrom('w1', { nowMs: T0, boards: pico });
    await until('replica B to hear of the boards w1 reports through A', () => heard.length === 2, 20_000);
    expect(await workerIds()).toEqual(['w1:pico']);

    // The same boards again, then a notification of the test's own: NOTIFYs arrive in commit order,
    // so once B hears the sentinel it would have heard a signal of the heartbeat.
    await a.workers.heardFrom('w1', { nowMs: T0 + 1_000, boards: pico });
    await notify(url, SENTINEL);
    await until("replica B to hear the test's own notification", () => sentinels === 1, 20_000);
    expect(heard).toHaveLength(2);
    await a.workers.revoke('w1', T0 + 2_000);
    await until('replica B to hear of the revocation through A', () => heard.length === 3, 20_000);
    expect(await workerIds()).toEqual(['w1 (revoked):pico']);
  });

  it('stops hearing the store once closed', { timeout: 60_000 }, async () => {
    const { a, b, roster } = await twoReplicas();
    const heard: string[] = [];
    const stopHearing = b.sessionQueue.onChange((id) => id === WORKERS_CHANGED_ID && heard.push(id));
    cleanups.push(async () => stopHearing());
    await b.sessionQueue.listening();
    expect(await roster.list()).toEqual([]);
    roster.close();
    await a.workers.insert({ workerId: 'w1', label: 'one', tokenSha256: '1'.repeat(64), createdAtMs: T0 });
    await until('replica B to hear of the worker added through A', () => heard.length === 1, 20_000);
    // Closed: the roster keeps what it read (an hour's cache on a clock that never moved).
    expect(await roster.list()).toEqual([]);
  });
});
