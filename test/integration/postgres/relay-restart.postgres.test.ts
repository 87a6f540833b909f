import { relaysOnPostgres } from '../../support/relays-on-postgres.js';

// test/integration/relay-restart.test.ts, on PostgreSQL-backed relays (decision 0440).
relaysOnPostgres();
await import('../relay-restart.test.js');
