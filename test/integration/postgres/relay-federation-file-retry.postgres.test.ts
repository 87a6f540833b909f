import { relaysOnPostgres } from '../../support/relays-on-postgres.js';

// test/integration/relay-federation-file-retry.test.ts, on PostgreSQL-backed relays (decision 0440).
relaysOnPostgres();
await import('../relay-federation-file-retry.test.js');
