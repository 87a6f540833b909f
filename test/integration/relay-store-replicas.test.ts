import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { RELAY_WRITE_LOCK_KEY } from '../../server/relay/data-access/pg-relay-engine.js';
import { pgConnection } from '../../server/store/postgres/pg-database.js';
import { RelayStore } from '../../server/relay/relay-store.js';
import { until } from '../support/hilbench-processes.js';
import { createTestDatabase } from '../support/postgres-test-database.js';

/**
 * Two relay stores on one PostgreSQL database, as two replicas hold them (decision 0440, 0441):
 * one write lock orders their events, each learns of the other's commits before using its caches,
 * and they share secrets and file contents.
 */

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function twoStores(): Promise<{ a: RelayStore; b: RelayStore; url: string }> {
  const database = await createTestDatabase();
  cleanups.push(database.drop);
  const a = RelayStore.openPostgres(database.url);
  cleanups.push(async () => a.close());
  const b = RelayStore.openPostgres(database.url);
  cleanups.push(async () => b.close());
  return { a, b, url: database.url };
}

const node = (n: number) => n.toString(16).padStart(64, '0');

describe('relay stores sharing PostgreSQL', () => {
  it("drops a store's caches when another store committed, before its next transaction reads and at its next refresh", async () => {
    const { a, b } = await twoStores();
    const told: string[] = [];
    a.onCachesInvalid(() => told.push('invalid'));
    a.tx(() => a.run(a.appendEvent('node', node(1), node(1), {}, 1)));
    a.refresh();
    const settled = told.length;
    // Its own commits and looks change nothing.
    a.tx(() => a.run(a.appendEvent('node', node(2), node(2), {}, 2)));
    a.refresh();
    expect(told).toHaveLength(settled);
    // Another store's commit: the next transaction drops the caches before its body runs.
    b.tx(() => b.run(b.appendEvent('node', node(3), node(3), {}, 3)));
    a.tx(() => told.push('body'));
    expect(told.slice(settled)).toEqual(['invalid', 'body']);
    // And a refresh (what every request does first) notices one too, once.
    b.tx(() => b.run(b.appendEvent('node', node(4), node(4), {}, 4)));
    a.refresh();
    a.refresh();
    expect(told.slice(settled)).toEqual(['invalid', 'body', 'invalid']);
  });

  it('commits events in seq order: a store waits for the write lock another replica holds', { timeout: 30_000 }, async () => {
    const { a, url } = await twoStores();
    // "Another replica" on its own connection: it takes the write lock, appends an event, and
    // commits a while later. The whole script is one message, so the server runs it while this
    // thread waits in a.tx below.
    const other = new pg.Client(pgConnection(url));
    await other.connect();
    cleanups.push(() => other.end());
    const script = other.query(
      `BEGIN; SELECT pg_advisory_xact_lock(${RELAY_WRITE_LOCK_KEY}); ` +
        `INSERT INTO relay.events (kind, author, subject, payload, created_ms) VALUES ('node', '${node(1)}', '${node(1)}', '{}', 1); ` +
        'SELECT pg_sleep(2); COMMIT;',
    );
    const watcher = new pg.Client(pgConnection(url));
    await watcher.connect();
    cleanups.push(() => watcher.end());
    await until('the other connection to hold the relay write lock', async () => {
      const { rows } = await watcher.query<{ n: string }>("SELECT COUNT(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND granted", [RELAY_WRITE_LOCK_KEY]);
      return Number(rows[0]?.n) === 1;
    }, 10_000);
    const seq = a.tx(() => a.run(a.appendEvent('node', node(2), node(2), {}, 2)));
    // Once a's event is committed, every event before it is too: a reader paging by seq misses none.
    expect(a.syncData.events.after(0, [], 10).map((e) => e.seq)).toEqual([seq - 1, seq]);
    await script;
  });

  it('reconnects after its database connection was cut, without a restart', async () => {
    const { a, url } = await twoStores();
    a.tx(() => a.run(a.appendEvent('node', node(1), node(1), {}, 1)));
    const pid = a.syncSql.value<number>('SELECT pg_backend_pid()');
    const admin = new pg.Client(pgConnection(url));
    await admin.connect();
    cleanups.push(() => admin.end());
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    // The statement that meets the cut connection may fail (with PostgreSQL's reason), and those
    // during the reconnect backoff fail at once (decision 0516: 250 ms at first); a later one reconnects.
    const errors: string[] = [];
    const count = await waitUntil(
      systemClock,
      () => {
        try {
          return a.syncData.events.count();
        } catch (err) {
          errors.push((err as Error).message);
          return undefined;
        }
      },
      { timeoutMs: 30_000, pollMs: 50, describe: 'the relay store reconnecting', lastSeen: () => errors.at(-1) ?? 'no error' },
    );
    for (const message of errors) expect(message).toContain('the relay database');
    expect(count).toBe(1);
    expect(a.syncSql.value<number>('SELECT pg_backend_pid()')).not.toBe(pid);
    a.tx(() => a.run(a.appendEvent('node', node(2), node(2), {}, 2)));
    expect(a.syncData.events.count()).toBe(2);
  });

  it('share the relay keys and file contents', async () => {
    const { a, b } = await twoStores();
    expect(b.loadOrCreateSecret('relay-node.key').equals(a.loadOrCreateSecret('relay-node.key'))).toBe(true);
    const files = { a: a.sharedFiles, b: b.sharedFiles };
    if (!files.a || !files.b) throw new Error('a PostgreSQL store has shared file contents');
    const content = Buffer.from([0, 1, 2, 255, 254]);
    expect(files.b.has('f1')).toBe(false);
    files.a.put('f1', content);
    files.a.put('f1', Buffer.from('another put changes nothing'));
    expect(files.b.has('f1')).toBe(true);
    expect(files.b.get('f1')?.equals(content)).toBe(true);
    expect(files.b.get('f2')).toBeUndefined();
  });
});
