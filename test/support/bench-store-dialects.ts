import { PostgresBenchStore } from '../../server/storage/bench/postgres/postgres-bench-store.js';
import type { SqlBenchStore } from '../../server/storage/bench/sql-bench-store.js';
import { SqliteBenchStore } from '../../server/storage/bench/sqlite-bench-store.js';
import { createTestDatabase } from './postgres-test-database.js';

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
      const database = await createTestDatabase({ migrated: 'bench' });
      const store = await PostgresBenchStore.open(database.url, { poolSize: 2 });
      return {
        store,
        close: async () => {
          await store.close();
          await database.drop();
        },
      };
    },
  ],
];
