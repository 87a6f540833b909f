import { relaysOnPostgres } from '../../support/relays-on-postgres.js';

// test/integration/relay-refused-upload-changes-nothing.test.ts, on PostgreSQL-backed relays (decision 0440).
relaysOnPostgres();
await import('../relay-refused-upload-changes-nothing.test.js');
