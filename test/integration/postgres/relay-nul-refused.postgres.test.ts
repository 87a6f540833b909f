import { relaysOnPostgres } from '../../support/relays-on-postgres.js';

// test/integration/relay-nul-refused.test.ts, on PostgreSQL-backed relays (decision 0440).
relaysOnPostgres();
await import('../relay-nul-refused.test.js');
