import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PgStatementError, PgSyncConnection } from '../../server/relay/data-access/pg-sync-connection.js';
import { RelayStore } from '../../server/relay/relay-store.js';
import { pgConnection } from '../../server/store/postgres/pg-database.js';
import { createTestDatabase } from '../support/postgres-test-database.js';
import { describeRelayRepositoriesContract } from './relay-repositories-contract.js';
import { describeRelayStoreContract, type OpenRelayStore } from './relay-store-contract.js';

// The same contract as SQLite's, on a fresh PostgreSQL database per store (dropped when it closes).
const open: OpenRelayStore = async () => {
  const database = await createTestDatabase();
  const store = RelayStore.openPostgres(database.url);
  return {
    store,
    dispose: async () => {
      store.close();
      await database.drop();
    },
  };
};
describeRelayStoreContract('postgres', open);
describeRelayRepositoriesContract('postgres', open);

describe('PgSyncConnection', () => {
  it('answers statements in order, turns a refused one into an error with its SQLSTATE and stays usable, and refuses after close', async () => {
    const database = await createTestDatabase();
    const connection = new PgSyncConnection(pgConnection(database.url), { statementTimeoutMs: 30_000, label: 'the test database' });
    try {
      expect(connection.query('SELECT $1::int + 1 AS n, $2::bytea AS b', [41, Buffer.from([1, 2])]).rows).toEqual([{ n: 42, b: new Uint8Array([1, 2]) }]);
      connection.query('CREATE TABLE t (id INTEGER PRIMARY KEY)');
      expect(connection.query('INSERT INTO t VALUES (1), (2)').rowCount).toBe(2);
      let refused: unknown;
      try {
        connection.query('INSERT INTO t VALUES (1)');
      } catch (err) {
        refused = err;
      }
      expect(refused).toBeInstanceOf(PgStatementError);
      expect(refused).toMatchObject({ code: '23505', message: expect.stringContaining('the test database') });
      expect(connection.query('SELECT COUNT(*) AS n FROM t').rows).toEqual([{ n: 2 }]);
    } finally {
      connection.close();
      await database.drop();
    }
    expect(() => connection.query('SELECT 1')).toThrow('the test database is closed');
  });
});

describe('the relay schema on PostgreSQL', () => {
  it('has every table and column of the SQLite schema (a new SQLite migration needs its PostgreSQL twin)', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'hilbench-relay-schema-'));
    const database = await createTestDatabase();
    const sqlite = new RelayStore(dataDir);
    const postgres = RelayStore.openPostgres(database.url);
    try {
      const sqliteColumns = new Set<string>();
      const tables = sqlite.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").pluck().all() as string[];
      for (const table of tables) {
        for (const column of sqlite.db.prepare(`SELECT name FROM pragma_table_info(?)`).pluck().all(table) as string[]) sqliteColumns.add(`${table}.${column}`);
      }
      const postgresColumns = new Set(
        postgres.sql.values<string>("SELECT table_name || '.' || column_name FROM information_schema.columns WHERE table_schema = 'relay'"),
      );
      expect([...sqliteColumns].filter((c) => !postgresColumns.has(c)).sort()).toEqual([]);
      // What only PostgreSQL has: insertion order of items, and what replicas share (decisions 0440, 0441).
      const onlyPostgres = [...postgresColumns].filter((c) => !sqliteColumns.has(c)).sort();
      expect(onlyPostgres).toEqual(['items.item_seq', 'relay_files.content', 'relay_files.item_id', 'relay_secrets.hex', 'relay_secrets.name', 'write_generation.generation', 'write_generation.id']);
    } finally {
      sqlite.close();
      postgres.close();
      rmSync(dataDir, { recursive: true, force: true });
      await database.drop();
    }
  });
});
