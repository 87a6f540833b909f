import { relaysOnPostgres } from '../../support/relays-on-postgres.js';

// test/integration/relay-social.test.ts, on PostgreSQL-backed relays (decision 0440).
relaysOnPostgres();
await import('../relay-social.test.js');
