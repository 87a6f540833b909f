import { PostgresBenchStore } from '../../server/storage/bench/postgres/postgres-bench-store.js';
import { createTestDatabase } from '../support/postgres-test-database.js';
import { describeBenchStoreContract } from './bench-store-contract.js';

// The same contract as SQLite's, on a fresh PostgreSQL database per store (dropped when it closes).
describeBenchStoreContract('postgres', async () => {
  const database = await createTestDatabase({ migrated: 'bench' });
  const store = await PostgresBenchStore.open(database.url, { poolSize: 4 });
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    await database.drop();
  };
  return store;
  // Each lease-model run creates and drops a database: 25 runs keep the file to tens of seconds
  // on a loaded machine; SQLite runs the full 60.
}, { leaseModelRuns: 25 });
