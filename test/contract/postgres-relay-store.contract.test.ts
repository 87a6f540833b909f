import { RelayStore } from '../../server/relay/relay-store.js';
import { createTestDatabase } from '../support/postgres-test-database.js';
import { describeRelayStoreContract } from './relay-store-contract.js';

// The same contract as SQLite's, on a fresh PostgreSQL database per store (dropped when it closes).
describeRelayStoreContract('postgres', async () => {
  const database = await createTestDatabase();
  const store = RelayStore.openPostgres(database.url);
  return {
    store,
    dispose: async () => {
      store.close();
      await database.drop();
    },
  };
});
