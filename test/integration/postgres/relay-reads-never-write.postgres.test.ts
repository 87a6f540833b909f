import { relaysOnPostgres } from '../../support/relays-on-postgres.js';

// test/integration/relay-reads-never-write.test.ts, on PostgreSQL-backed relays (decision 0440).
relaysOnPostgres();
await import('../relay-reads-never-write.test.js');
