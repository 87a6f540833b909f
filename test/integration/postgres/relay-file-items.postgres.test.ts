import { relaysOnPostgres } from '../../support/relays-on-postgres.js';

// test/integration/relay-file-items.test.ts, on PostgreSQL-backed relays (decision 0440).
relaysOnPostgres();
await import('../relay-file-items.test.js');
