import { SqliteBenchStore } from '../../server/storage/bench/sqlite-bench-store.js';
import { describeBenchStoreContract } from './bench-store-contract.js';

describeBenchStoreContract('sqlite', () => new SqliteBenchStore(':memory:'));
