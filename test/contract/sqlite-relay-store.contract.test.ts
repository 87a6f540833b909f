import { RelayStore } from '../../server/relay/relay-store.js';
import { openSqliteRelayStore } from '../support/relay-store-openers.js';
import { tempDataDir } from '../support/relay-test-kit.js';
import { describeRelayCountsContract } from './relay-counts-contract.js';
import { describeRelayGuaranteesContract } from './relay-guarantees-contract.js';
import { describeRelayRepositoriesContract } from './relay-repositories-contract.js';
import { describeRelaySearchContract } from './relay-search-contract.js';
import { describeRelayStoreContract, type OpenRelayStore } from './relay-store-contract.js';

// The embedded default: relay.sqlite in a fresh data dir per store.
const open: OpenRelayStore = openSqliteRelayStore;
describeRelayStoreContract('sqlite', open);
describeRelayRepositoriesContract('sqlite', open);
describeRelaySearchContract('sqlite', open, { numRuns: 200 });
// No second store: SQLite's relay has one writer, this process (a replica needs PostgreSQL).
describeRelayGuaranteesContract('sqlite', open);

// One data dir; each store opened on it in turn is the relay after a restart.
describeRelayCountsContract(
  'sqlite',
  async () => {
    const data = tempDataDir('hilbench-relay-counts-');
    const stores: RelayStore[] = [];
    return {
      open: async () => {
        const store = new RelayStore(data.dir);
        stores.push(store);
        return store;
      },
      dispose: async () => {
        for (const store of stores) await store.close();
        data.remove();
      },
    };
  },
  { replicas: false },
);
