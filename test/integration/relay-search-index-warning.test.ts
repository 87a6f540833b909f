import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import pg from 'pg';
import { pgConnection } from '../../server/storage/postgres/pg-pool.js';
import { createTestDatabase } from '../support/postgres-test-database.js';
import { startRelayServer, tempDataDir } from '../support/relay-test-kit.js';

/**
 * A relay whose GET /search reads every row says so once at start (decision 0506): on PostgreSQL
 * where pg_trgm could not be installed. Where the index is there it says nothing.
 */
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const warning = /GET \/search scans every title, name and about: the PostgreSQL extension pg_trgm is not installed/;

async function relayOn(databaseUrl: string | undefined): Promise<string[]> {
  const data = tempDataDir('relay-search-warning-');
  cleanups.push(() => data.remove());
  const logger = memoryLogger();
  const relay = await startRelayServer({ clock: systemClock, dataDir: data.dir, logger, ...(databaseUrl ? { databaseUrl } : {}) });
  cleanups.push(() => relay.close());
  return logger.lines.filter((line) => line.startsWith('warn:'));
}

async function databasePreparedWith(setup: string | null): Promise<string> {
  // Empty: the relay's migration meets `setup` (or nothing) and decides whether it can build the index.
  const database = await createTestDatabase({ migrated: 'none' });
  cleanups.push(() => database.drop());
  if (setup !== null) {
    const connection = new pg.Client(pgConnection(database.url));
    await connection.connect();
    await connection.query(setup);
    await connection.end();
  }
  return database.url;
}

describe('the relay says at start when its search scans', () => {
  it('warns on PostgreSQL where pg_trgm cannot be installed', async () => {
    // A function pg_trgm would create, already there: CREATE EXTENSION fails as on a managed server that refuses it.
    const url = await databasePreparedWith("CREATE SCHEMA relay; CREATE FUNCTION relay.similarity(text, text) RETURNS real LANGUAGE sql AS 'SELECT 0::real'");
    expect((await relayOn(url)).filter((line) => warning.test(line))).toHaveLength(1);
  });

  it('says nothing where the index is there: PostgreSQL with pg_trgm, and SQLite', async () => {
    expect((await relayOn(await databasePreparedWith(null))).filter((line) => warning.test(line))).toEqual([]);
    expect((await relayOn(undefined)).filter((line) => warning.test(line))).toEqual([]);
  });
});
