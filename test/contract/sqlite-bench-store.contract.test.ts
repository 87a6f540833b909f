import { SqliteBenchStore } from '../../server/store/sqlite-bench-store.js';
import { describeBenchStoreContract } from './bench-store-contract.js';

describeBenchStoreContract('sqlite', () => new SqliteBenchStore(':memory:'));
