import { relaysOnPostgres } from '../../support/relays-on-postgres.js';

// test/integration/relay-unstorable-text.test.ts, on PostgreSQL-backed relays (decision 0440).
relaysOnPostgres();
await import('../relay-unstorable-text.test.js');
