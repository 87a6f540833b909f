import { relaysOnPostgres } from '../../support/relays-on-postgres.js';

// test/integration/relay-lying-peer.test.ts, on PostgreSQL-backed relays (decision 0440).
relaysOnPostgres();
await import('../relay-lying-peer.test.js');
