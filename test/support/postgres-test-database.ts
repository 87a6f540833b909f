import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { pgConnection } from '../../server/storage/postgres/pg-pool.js';
import { postgresSuites } from '../host-tool-suites.js';
import { databaseUrl, migratedTemplate, type TemplateTables } from './postgres-template.js';

/** The server tests create their databases on: HILBENCH_TEST_DATABASE_URL, or the local socket. */
export const testDatabaseBaseUrl = process.env.HILBENCH_TEST_DATABASE_URL ?? postgresSuites.defaultBaseUrl;

export interface TestDatabaseOptions {
  /**
   * Whose tables the database starts with, already at the latest version: copied from a template
   * the same migrations built (decision 0830), so opening that store runs no migration step.
   * `both` (the default) suits any test; `bench` or `relay` is cheaper to copy where only that
   * store opens it (another store's tables are then made by its migrations as it opens, as on a
   * server). `none`: an empty database, for tests of the migrations themselves (an earlier version
   * upgraded, replicas migrating together, a database prepared before migrating).
   */
  migrated?: TemplateTables | 'none';
  /**
   * The template to copy instead of the shared one of `migrated` (built by the same migrations if
   * absent): for tests that drop their template, which must never drop one other workers copy.
   */
  templateName?: string;
}

/** PostgreSQL's invalid_catalog_name: the template was dropped meanwhile (by another checkout, as stale). */
const NO_SUCH_DATABASE = '3D000';

/**
 * A fresh database for one test (or one replica set), dropped by `drop()`. Databases are cheap
 * here and isolate tests completely.
 */
export async function createTestDatabase(options: TestDatabaseOptions = {}): Promise<{ url: string; drop: () => Promise<void> }> {
  const migrated = options.migrated ?? 'both';
  const own = options.templateName === undefined ? {} : { name: options.templateName };
  const name = `hilbench_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client(pgConnection(testDatabaseBaseUrl));
  await admin.connect();
  try {
    if (migrated === 'none') {
      await admin.query(`CREATE DATABASE ${name}`);
    } else {
      try {
        await admin.query(`CREATE DATABASE ${name} TEMPLATE ${await migratedTemplate(testDatabaseBaseUrl, migrated, own)}`);
      } catch (err) {
        if ((err as { code?: string }).code !== NO_SUCH_DATABASE) throw err;
        await admin.query(`CREATE DATABASE ${name} TEMPLATE ${await migratedTemplate(testDatabaseBaseUrl, migrated, { ...own, again: true })}`);
      }
    }
  } finally {
    await admin.end();
  }
  return {
    url: databaseUrl(testDatabaseBaseUrl, name),
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
