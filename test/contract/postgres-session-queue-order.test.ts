import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgDatabase } from '../../server/storage/bench/postgres/pg-database.js';
import { pgConnection } from '../../server/storage/postgres/pg-pool.js';
import { PgSessionQueue } from '../../server/storage/bench/postgres/pg-session-queue.js';
import type { SessionWaiter } from '../../server/storage/bench/session-queue-store.js';
import { QUEUE_ORDER_LOCK_CLASS } from '../../server/storage/bench/sql/dialect.js';
import { until } from '../support/hilbench-processes.js';
import { createTestDatabase } from '../support/postgres-test-database.js';

/**
 * Two replicas adding waiters to one pool's line at once, on PostgreSQL: a waiter's number is drawn
 * when its INSERT runs, so without an order kept to the commit, the later waiter could be visible
 * (and read itself first in line) while the earlier one's transaction is still open, then be
 * overtaken by it (decision 1030: waiters join only at the back).
 */

let database: Awaited<ReturnType<typeof createTestDatabase>>;
const dbs: PgDatabase[] = [];
const queues: PgSessionQueue[] = [];

beforeAll(async () => {
  database = await createTestDatabase({ migrated: 'bench' });
  const setUp = new pg.Client(pgConnection(database.url));
  await setUp.connect();
  for (const id of ['w1', 'w2', 'u1', 'm1']) {
    await setUp.query('INSERT INTO agents (agent_id, label, token_sha256, created_at_ms) VALUES ($1, $1, $2, 0)', [`agent_${id}`, id.repeat(32)]);
  }
  await setUp.end();
});

afterAll(async () => {
  for (const queue of queues) await queue.close();
  for (const db of dbs) await db.close();
  await database?.drop();
});

function waiter(waiterId: string, pool: string): SessionWaiter {
  return { waiterId, queue: pool, pool, agentId: `agent_${waiterId}`, enqueuedAtMs: 1_000, aliveUntilMs: 60_000 };
}

/** A replica's queue whose writes stop before their commit until `release`; `reached` resolves when one got there. */
function heldBeforeCommit(): { queue: PgSessionQueue; reached: Promise<void>; release: () => void } {
  const db = new PgDatabase(database.url, { poolSize: 2 });
  dbs.push(db);
  let reachedCommit!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((resolve) => (reachedCommit = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  const held = Object.assign(Object.create(db) as PgDatabase, {
    write: <T>(work: Parameters<PgDatabase['write']>[0]) =>
      db.write(async (q) => {
        const result = (await work(q)) as T;
        reachedCommit();
        await released;
        return result;
      }),
  });
  const queue = new PgSessionQueue(held);
  queues.push(queue);
  return { queue, reached, release };
}

/** Two replicas' session queues on one database, the first one's writes held before their commit. */
function twoReplicas(): { first: ReturnType<typeof heldBeforeCommit>; second: PgSessionQueue } {
  const first = heldBeforeCommit();
  const db = new PgDatabase(database.url, { poolSize: 2 });
  dbs.push(db);
  const second = new PgSessionQueue(db);
  queues.push(second);
  return { first, second };
}

describe('PostgreSQL session line', () => {
  it('keeps a waiter that joins while another is joining behind it until the first is visible', async () => {
    const { first, second } = twoReplicas();

    const joiningFirst = first.queue.enqueue(waiter('w1', 'pico'));
    await first.reached;
    const joiningSecond = second.enqueue(waiter('w2', 'pico'));

    // The second join either finishes while the first is still uncommitted (the numbers' order is
    // not the order they become visible in) or waits for the first's commit on the database.
    const watcher = new pg.Client(pgConnection(database.url));
    await watcher.connect();
    const waitingOnTheFirst = async () =>
      // pg_locks is the cluster's: only this database's waits on a queue-order lock count.
      Number(
        (
          await watcher.query<{ n: string }>(
            "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = $1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            [QUEUE_ORDER_LOCK_CLASS],
          )
        ).rows[0]!.n,
      ) > 0;
    try {
      const seen = await Promise.race([joiningSecond.then(() => 'joined while the first was uncommitted'), until('the second join to wait for the first', waitingOnTheFirst, 20_000).then(() => 'waited')]);
      expect(seen).toBe('waited');
    } finally {
      first.release();
      await watcher.end();
    }
    const [seqFirst, seqSecond] = await Promise.all([joiningFirst, joiningSecond]);
    expect(seqFirst).toBeLessThan(seqSecond);
    expect((await second.waiters('pico', 2_000)).map((w) => w.waiterId)).toEqual(['w1', 'w2']);
  });

  it('does not hold up a waiter of another pool', async () => {
    const { first, second } = twoReplicas();
    const joiningFirst = first.queue.enqueue(waiter('u1', 'uno'));
    await first.reached;
    await second.enqueue(waiter('m1', 'microbit'));
    first.release();
    await joiningFirst;
    expect((await second.waiters('microbit', 2_000)).map((w) => w.waiterId)).toEqual(['m1']);
  });
});
