import type { Clock } from '../../core/clock.js';
import { PostgresBenchStore } from '../../server/storage/bench/postgres/postgres-bench-store.js';
import { createTestDatabase } from './postgres-test-database.js';

/** `count` PostgreSQL bench stores on one database, and how to be rid of them. */
export interface PostgresBenchStores {
  stores: PostgresBenchStore[];
  /** The database they share (for a test's own client: a NOTIFY, a look at its rows). */
  url: string;
  /** Closes every store (with its own close, though a caller replaced it), then drops the database. */
  close(): Promise<void>;
}

/**
 * `count` PostgreSQL bench stores, as `count` replicas open them, on one fresh database copied from
 * the bench's migrated template (decision 0830), with `poolSize` connections each (default 2) and
 * `clock` for their reconnect backoff. A store that fails to open leaves nothing behind.
 */
export async function postgresBenchStores(count: number, options: { poolSize?: number; clock?: Clock } = {}): Promise<PostgresBenchStores> {
  const database = await createTestDatabase({ migrated: 'bench' });
  const stores: PostgresBenchStore[] = [];
  // Each store's own close, taken as it opens: a caller may make a store's `close` this one.
  const closers: Array<() => Promise<void>> = [];
  const close = async () => {
    for (const closeStore of closers.splice(0)) await closeStore();
    await database.drop();
  };
  try {
    for (let k = 0; k < count; k++) {
      const store = await PostgresBenchStore.open(database.url, { poolSize: options.poolSize ?? 2, ...(options.clock && { clock: options.clock }) });
      stores.push(store);
      closers.push(store.close.bind(store));
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { stores, url: database.url, close };
}
