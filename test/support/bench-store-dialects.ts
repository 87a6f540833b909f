import type { SqlBenchStore } from '../../server/storage/bench/sql-bench-store.js';
import { SqliteBenchStore } from '../../server/storage/bench/sqlite-bench-store.js';
import { postgresBenchStores } from './postgres-bench-stores.js';

/** A fresh bench store of each dialect, for `describe.each`: SQLite in memory, PostgreSQL in a database of its own, dropped on close. */
export const benchStoreDialects: Array<[string, () => Promise<{ store: SqlBenchStore; close: () => Promise<void> }>]> = [
  [
    'sqlite',
    async () => {
      const store = new SqliteBenchStore(':memory:');
      return { store, close: () => store.close() };
    },
  ],
  [
    'postgres',
    async () => {
      const { stores, close } = await postgresBenchStores(1);
      return { store: stores[0]!, close };
    },
  ],
];
