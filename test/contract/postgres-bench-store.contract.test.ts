import { postgresBenchStores } from '../support/postgres-bench-stores.js';
import { describeBenchStoreContract } from './bench-store-contract.js';

// The same contract as SQLite's, on a fresh PostgreSQL database per store (dropped when it closes).
describeBenchStoreContract('postgres', async () => {
  const { stores, close } = await postgresBenchStores(1, { poolSize: 4 });
  const store = stores[0]!;
  store.close = close;
  return store;
  // Each lease-model run creates and drops a database: 25 runs keep the file to tens of seconds
  // on a loaded machine; SQLite runs the full 60.
}, { leaseModelRuns: 25 });
