import { PostgresBenchStore } from '../../server/storage/bench/postgres/postgres-bench-store.js';
import { createTestDatabase } from '../support/postgres-test-database.js';
import { describePoolLeaseModel } from './bench-pool-lease-model.js';

/** `count` PostgreSQL stores (as `count` replicas open them) on one fresh database, dropped at the end. */
async function storesOnOneDatabase(count: number) {
  const database = await createTestDatabase({ migrated: 'bench' });
  const stores: PostgresBenchStore[] = [];
  for (let k = 0; k < count; k++) stores.push(await PostgresBenchStore.open(database.url, { poolSize: 3 }));
  return {
    stores,
    close: async () => {
      for (const store of stores) await store.close();
      await database.drop();
    },
  };
}

// Each run creates and drops a database: a few runs keep the file to tens of seconds on a loaded machine.
describePoolLeaseModel('postgres, one store', () => storesOnOneDatabase(1), { numRuns: 8 });
describePoolLeaseModel('postgres, two stores on one database', () => storesOnOneDatabase(2), { numRuns: 12 });
