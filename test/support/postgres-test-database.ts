import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { pgConnection } from '../../server/storage/bench/postgres/pg-database.js';
import { postgresSuites } from '../host-tool-suites.js';

/** The server tests create their databases on: HILBENCH_TEST_DATABASE_URL, or the local socket. */
export const testDatabaseBaseUrl = process.env.HILBENCH_TEST_DATABASE_URL ?? postgresSuites.defaultBaseUrl;

/** `base` with its database name replaced by `name`. */
function urlFor(base: string, name: string): string {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * A fresh, empty database for one test (or one replica set), dropped by `drop()`. Databases are
 * cheap here and isolate tests completely, migrations included.
 */
export async function createTestDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `hilbench_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client(pgConnection(testDatabaseBaseUrl));
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return {
    url: urlFor(testDatabaseBaseUrl, name),
    drop: async () => {
      const client = new pg.Client(pgConnection(testDatabaseBaseUrl));
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}
