import { openSqliteRelayStore } from '../support/relay-store-openers.js';
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
