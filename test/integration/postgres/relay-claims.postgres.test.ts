import { relaysOnPostgres } from '../../support/relays-on-postgres.js';

// test/integration/relay-claims.test.ts, on PostgreSQL-backed relays (decision 0440).
relaysOnPostgres();
await import('../relay-claims.test.js');
