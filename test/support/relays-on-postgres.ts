import { afterAll, expect } from 'vitest';
import { createTestDatabase } from './postgres-test-database.js';
import { storeRelaysOnPostgres } from './relay-test-kit.js';

/**
 * Runs a relay test file's tests against PostgreSQL-backed relays (decision 0440): called before the
 * file is imported (test/integration/postgres/), it makes every relay the kit starts keep its
 * tables in a fresh database, one per data dir, all dropped once the file's tests are done. The
 * test bodies are the SQLite suite's own, so both stores answer the same HTTP tests.
 */
export function relaysOnPostgres(): void {
  const drops: Array<() => Promise<void>> = [];
  storeRelaysOnPostgres(async () => {
    const database = await createTestDatabase({ migrated: 'relay' });
    drops.push(database.drop);
    return database.url;
  });
  // Registered before the suite's own hooks, so it runs after them (vitest runs after-hooks as a
  // stack): the relays are closed by then. FORCE ends the connections of any relay left open.
  afterAll(async () => {
    // A suite that stopped starting its relays through the kit would otherwise pass here on SQLite.
    expect(drops.length, 'relays this file started on PostgreSQL').toBeGreaterThan(0);
    for (const drop of drops.splice(0)) await drop();
  });
}
