import { postgresBenchStores } from '../support/postgres-bench-stores.js';
import { describePoolLeaseModel } from './bench-pool-lease-model.js';

/** `count` PostgreSQL stores (as `count` replicas open them) on one fresh database, dropped at the end. */
const storesOnOneDatabase = (count: number) => postgresBenchStores(count, { poolSize: 3 });

// Each run creates and drops a database: a few runs keep the file to tens of seconds on a loaded machine.
describePoolLeaseModel('postgres, one store', () => storesOnOneDatabase(1), { numRuns: 8 });
describePoolLeaseModel('postgres, two stores on one database', () => storesOnOneDatabase(2), { numRuns: 12 });
