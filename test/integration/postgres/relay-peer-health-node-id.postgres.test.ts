import { relaysOnPostgres } from '../../support/relays-on-postgres.js';

// test/integration/relay-peer-health-node-id.test.ts, on PostgreSQL-backed relays (decision 0440):
// a version holding U+0000 failed every probe of that peer there.
relaysOnPostgres();
await import('../relay-peer-health-node-id.test.js');
