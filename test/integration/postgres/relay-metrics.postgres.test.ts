import { relaysOnPostgres } from '../../support/relays-on-postgres.js';

// test/integration/relay-metrics.test.ts, on PostgreSQL-backed relays (decision 0440): the store-wide gauges read SQL there.
relaysOnPostgres();
await import('../relay-metrics.test.js');
