import Database from 'better-sqlite3';
import { join } from 'node:path';
import pg from 'pg';
import { pgConnection } from '../../server/storage/postgres/pg-pool.js';
import { relayDatabaseUrl } from './relay-test-kit.js';

/**
 * Every table of the relay started (through the kit) on `dataDir`, but those in `except`, each row
 * as JSON in a stable order: read from its relay.sqlite, or from its PostgreSQL database's `relay`
 * schema when the test file runs its relays there (test/support/relays-on-postgres.ts). Tests
 * compare two such snapshots of one relay, so the two stores' row encodings need not agree.
 */
export async function relayTableRows(dataDir: string, options: { except?: readonly string[] } = {}): Promise<Record<string, string[]>> {
  const except = options.except ?? [];
  const databaseUrl = relayDatabaseUrl(dataDir);
  if (databaseUrl === undefined) {
    const db = new Database(join(dataDir, 'relay.sqlite'), { readonly: true, fileMustExist: true });
    try {
      // Not the search index (FTS5 virtual and shadow tables, decision 0505): derived from items
      // and nodes, like PostgreSQL's indexes, which are not read there either.
      const derived = "SELECT name FROM pragma_table_list WHERE type IN ('virtual', 'shadow')";
      const tables = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN (${derived}) ORDER BY name`).pluck().all() as string[]).filter((t) => !except.includes(t));
      return Object.fromEntries(tables.map((table) => [table, db.prepare(`SELECT * FROM "${table}"`).all().map((row) => JSON.stringify(row)).sort()]));
    } finally {
      db.close();
    }
  }
  const client = new pg.Client(pgConnection(databaseUrl));
  await client.connect();
  try {
    const listed = await client.query<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'relay' AND table_type = 'BASE TABLE' ORDER BY table_name");
    const tables = listed.rows.map((row) => row.name).filter((t) => !except.includes(t));
    const rows: Record<string, string[]> = {};
    for (const table of tables) rows[table] = (await client.query(`SELECT * FROM relay."${table}"`)).rows.map((row) => JSON.stringify(row)).sort();
    return rows;
  } finally {
    await client.end();
  }
}
