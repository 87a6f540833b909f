import { relaysOnPostgres } from '../../support/relays-on-postgres.js';

// test/integration/relay-federation-pull.test.ts, on PostgreSQL-backed relays (decision 0440).
relaysOnPostgres();
await import('../relay-federation-pull.test.js');
