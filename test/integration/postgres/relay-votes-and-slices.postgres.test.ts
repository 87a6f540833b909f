import { relaysOnPostgres } from '../../support/relays-on-postgres.js';

// test/integration/relay-votes-and-slices.test.ts, on PostgreSQL-backed relays (decision 0440).
relaysOnPostgres();
await import('../relay-votes-and-slices.test.js');
