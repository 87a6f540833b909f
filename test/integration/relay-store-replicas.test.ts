import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import { pgConnection } from '../../server/storage/postgres/pg-pool.js';
import { RelayStore } from '../../server/relay/relay-store.js';
import { createTestDatabase } from '../support/postgres-test-database.js';

/**
 * Two relay stores on one PostgreSQL database, as two replicas hold them (decision 0440, 0441):
 * a store reconnects by itself, and they share secrets and file contents.
 */

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function twoStores(): Promise<{ a: RelayStore; b: RelayStore; url: string }> {
  const database = await createTestDatabase({ migrated: 'relay' });
  cleanups.push(database.drop);
  const a = await RelayStore.openPostgres(database.url);
  cleanups.push(() => a.close());
  const b = await RelayStore.openPostgres(database.url);
  cleanups.push(() => b.close());
  return { a, b, url: database.url };
}

const node = (n: number) => n.toString(16).padStart(64, '0');

describe('relay stores sharing PostgreSQL', () => {
  // Dropping caches on the other's commit and commit order under the shared write lock are decision
  // 0440's guarantees, shown in the relay store contract (test/contract/relay-guarantees-contract.ts).

  it('reconnects after its database connection was cut, without a restart', async () => {
    const { a, url } = await twoStores();
    await a.tx(a.appendEvent('node', node(1), node(1), {}, 1));
    const pid = await a.plainSql.value<number>('SELECT pg_backend_pid()');
    const admin = new pg.Client(pgConnection(url));
    await admin.connect();
    cleanups.push(() => admin.end());
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    // The statement that meets the cut connection may fail (with PostgreSQL's reason), and those
    // during the reconnect backoff fail at once (decision 0516: 250 ms at first); a later one reconnects.
    const errors: string[] = [];
    const count = await waitUntil(
      systemClock,
      async () => {
        try {
          return await a.plainData.events.count();
        } catch (err) {
          errors.push((err as Error).message);
          return undefined;
        }
      },
      { timeoutMs: 30_000, pollMs: 50, describe: 'the relay store reconnecting', lastSeen: () => errors.at(-1) ?? 'no error' },
    );
    for (const message of errors) expect(message).toContain('the relay database');
    expect(count).toBe(1);
    expect(await a.plainSql.value<number>('SELECT pg_backend_pid()')).not.toBe(pid);
    await a.tx(a.appendEvent('node', node(2), node(2), {}, 2));
    expect(await a.plainData.events.count()).toBe(2);
  });

  it('share the relay keys and file contents', async () => {
    const { a, b } = await twoStores();
    expect((await b.loadOrCreateSecret('relay-node.key')).equals(await a.loadOrCreateSecret('relay-node.key'))).toBe(true);
    const files = { a: a.sharedFiles, b: b.sharedFiles };
    if (!files.a || !files.b) throw new Error('a PostgreSQL store has shared file contents');
    const content = Buffer.from([0, 1, 2, 255, 254]);
    expect(await files.b.has('f1')).toBe(false);
    await files.a.put('f1', content);
    await files.a.put('f1', Buffer.from('another put changes nothing'));
    expect(await files.b.has('f1')).toBe(true);
    expect((await files.b.get('f1'))?.equals(content)).toBe(true);
    expect(await files.b.get('f2')).toBeUndefined();
  });
});
