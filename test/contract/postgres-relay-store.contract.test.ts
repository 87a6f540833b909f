import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { RELAY_WRITE_LOCK_KEY } from '../../server/storage/relay/pg-relay-engine.js';
import { pgRelayMigrations } from '../../server/storage/relay/pg-relay-migrations.js';
import { performRelayStatement } from '../../server/storage/relay/pg-relay-sql.js';
import { migrate } from '../../server/storage/run-migrations.js';
import { runSteps } from '../../server/storage/sql-steps.js';
import { searchIndexOf } from '../../server/storage/relay/trigram-prefilter.js';
import { RelayStore } from '../../server/relay/relay-store.js';
import { pgConnection } from '../../server/storage/postgres/pg-pool.js';
import { until } from '../support/hilbench-processes.js';
import { createTestDatabase } from '../support/postgres-test-database.js';
import { openPostgresRelayStore } from '../support/relay-store-openers.js';
import { describeRelayCountsContract } from './relay-counts-contract.js';
import { describeRelayGuaranteesContract, type OpenRelayReplicas } from './relay-guarantees-contract.js';
import { describeRelayRepositoriesContract } from './relay-repositories-contract.js';
import { describeRelaySearchContract } from './relay-search-contract.js';
import { describeRelayStoreContract, type OpenRelayStore } from './relay-store-contract.js';

// The same contract as SQLite's, on a fresh PostgreSQL database per store (dropped when it closes).
const open: OpenRelayStore = () => openPostgresRelayStore();
describeRelayStoreContract('postgres', open);
describeRelayRepositoriesContract('postgres', open);
describeRelaySearchContract('postgres', open, { numRuns: 40 });

// Two stores on one fresh database, as two replicas hold them; "another replica" holding the write
// lock is a plain connection sending its whole transaction as one message, so PostgreSQL runs it to
// its commit while a store waits for the lock.
const replicas: OpenRelayReplicas = async () => {
  const database = await createTestDatabase({ migrated: 'relay' });
  const a = await RelayStore.openPostgres(database.url);
  const b = await RelayStore.openPostgres(database.url);
  const clients: pg.Client[] = [];
  const client = async () => {
    const c = new pg.Client(pgConnection(database.url));
    clients.push(c);
    await c.connect();
    return c;
  };
  const pending: Promise<unknown>[] = [];
  return {
    a,
    b,
    holdWriteLock: async () => {
      const holder = await client();
      const node = '0'.repeat(63) + '1';
      const committed = holder
        .query(
          `BEGIN; SELECT pg_advisory_xact_lock(${RELAY_WRITE_LOCK_KEY}); ` +
            `INSERT INTO relay.events (kind, author, subject, payload, created_ms) VALUES ('node', '${node}', '${node}', '{}', 1); ` +
            'SELECT pg_sleep(1); COMMIT;',
        )
        .then(() => undefined);
      pending.push(committed.catch(() => undefined));
      const watcher = await client();
      await until('the other connection to hold the relay write lock', async () => {
        const { rows } = await watcher.query<{ n: string }>("SELECT COUNT(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND granted", [RELAY_WRITE_LOCK_KEY]);
        return Number(rows[0]?.n) === 1;
      }, 10_000);
      return { committed };
    },
    gate: async () => {
      // A lock of the test's: a step that asks for it waits, inside its transaction, until released.
      const holder = await client();
      const key = 0x67617465; // 'gate'
      await holder.query('SELECT pg_advisory_lock($1)', [key]);
      return {
        wait: function* () {
          yield { kind: 'one', sql: 'SELECT pg_advisory_xact_lock(?) AS held', params: [key] };
        },
        release: async () => {
          await holder.query('SELECT pg_advisory_unlock($1)', [key]);
        },
        reached: () =>
          until('a transaction to wait at the gate', async () => {
            const { rows } = await holder.query<{ n: string }>("SELECT COUNT(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted", [key]);
            return Number(rows[0]?.n) > 0;
          }, 10_000),
      };
    },
    someoneWaitsForWriteLock: async () => {
      const watcher = await client();
      // Any lock of the relay's writers not granted: the write lock, or (were it gone) a row the first writer holds.
      await until('a store to wait for the write lock', async () => {
        const { rows } = await watcher.query<{ n: string }>('SELECT COUNT(*) AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE NOT l.granted AND a.datname = current_database() AND NOT (l.locktype = $1 AND l.objid = $2)', ['advisory', 0x67617465]);
        return Number(rows[0]?.n) > 0;
      }, 10_000);
    },
    dispose: async () => {
      await Promise.all(pending);
      for (const c of clients) await c.end();
      await a.close();
      await b.close();
      await database.drop();
    },
  };
};
describeRelayGuaranteesContract('postgres', open, replicas);

// One database; each store opened on it is a replica (or the relay after a restart, once the first closed).
describeRelayCountsContract(
  'postgres',
  async () => {
    const database = await createTestDatabase({ migrated: 'relay' });
    const stores: RelayStore[] = [];
    return {
      open: async () => {
        const store = await RelayStore.openPostgres(database.url);
        stores.push(store);
        return store;
      },
      dispose: async () => {
        for (const store of stores) await store.close();
        await database.drop();
      },
    };
  },
  { replicas: true },
);

describe('the relay schema on PostgreSQL', () => {
  it('has every table and column of the SQLite schema (a new SQLite migration needs its PostgreSQL twin)', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'hilbench-relay-schema-'));
    // Empty: the relay's own migrations make the tables compared here.
    const database = await createTestDatabase({ migrated: 'none' });
    const sqlite = new RelayStore(dataDir);
    const postgres = await RelayStore.openPostgres(database.url);
    try {
      const sqliteColumns = new Set<string>();
      // Tables only: the search index (FTS5 virtual tables items_search, nodes_search and their
      // shadow tables, decision 0505) is SQLite's counterpart of PostgreSQL's pg_trgm indexes
      // (decision 0506), which information_schema.columns does not list either.
      const tables = sqlite.db.prepare("SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite_%'").pluck().all() as string[];
      expect(sqlite.db.prepare("SELECT name FROM pragma_table_list WHERE type = 'virtual' ORDER BY name").pluck().all()).toEqual(['items_search', 'nodes_search']);
      for (const table of tables) {
        for (const column of sqlite.db.prepare(`SELECT name FROM pragma_table_info(?)`).pluck().all(table) as string[]) sqliteColumns.add(`${table}.${column}`);
      }
      const postgresColumns = new Set(
        await postgres.plainSql.values<string>("SELECT table_name || '.' || column_name FROM information_schema.columns WHERE table_schema = 'relay'"),
      );
      expect([...sqliteColumns].filter((c) => !postgresColumns.has(c)).sort()).toEqual([]);
      // What only PostgreSQL has: insertion order of items, and what replicas share (decisions 0440, 0441).
      const onlyPostgres = [...postgresColumns].filter((c) => !sqliteColumns.has(c)).sort();
      expect(onlyPostgres).toEqual(['items.item_seq', 'relay_files.content', 'relay_files.item_id', 'relay_secrets.hex', 'relay_secrets.name', 'write_generation.generation', 'write_generation.id']);
    } finally {
      await sqlite.close();
      await postgres.close();
      rmSync(dataDir, { recursive: true, force: true });
      await database.drop();
    }
  });

  /** A fresh database prepared by `setup` (a superuser's statements) before the relay migrates it. */
  async function migratedAfter(setup: string): Promise<{ store: RelayStore; dispose: () => Promise<void> }> {
    const database = await createTestDatabase({ migrated: 'none' });
    const connection = new pg.Client(pgConnection(database.url));
    await connection.connect();
    await connection.query(setup);
    await connection.end();
    return openPostgresRelayStore({ database });
  }

  it('migrates and keeps searching, by scanning, where pg_trgm cannot be installed (decision 0506)', async () => {
    // A function pg_trgm would create, already there: CREATE EXTENSION fails as it does where a
    // managed server refuses it, and the migration must go on without it.
    const { store, dispose } = await migratedAfter("CREATE SCHEMA relay; CREATE FUNCTION relay.similarity(text, text) RETURNS real LANGUAGE sql AS 'SELECT 0::real'");
    try {
      expect(await store.plain(searchIndexOf(store.sql))).toBe('scan');
      expect(await store.plainSql.value("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")).toBeUndefined();
      await store.plainData.items.insert({ item_id: 'i1', type: 'claim', kind: 'note', title: 'The Uno bench', body: '', file_bytes: null, media_type: null, author: 'n1', bot_id: null, origin: null, created_ms: 1, authorship: null });
      expect((await store.plainData.items.searchTitles('%uno b%', 10)).map((i) => i.item_id)).toEqual(['i1']);
    } finally {
      await dispose();
    }
  });

  it('seeds the kept counts from the rows of a database migrated before them, and counts rows deleted or written by hand (decision 1100)', async () => {
    const database = await createTestDatabase({ migrated: 'none' });
    // One connection: the migration's BEGIN and COMMIT must reach the same session.
    const connection = new pg.Pool({ ...pgConnection(database.url), options: '-c search_path=relay', max: 1 });
    try {
      // The relay's schema as the release before the counts left it, with rows.
      const before = pgRelayMigrations.filter((m) => m.version < 4);
      await runSteps(migrate(before, { label: 'the relay schema before the counts', versionTable: 'relay.schema_version', begin: 'BEGIN', enter: ['CREATE SCHEMA IF NOT EXISTS relay'] }), (statement) => performRelayStatement(connection, statement));
      await connection.query(
        "INSERT INTO nodes (node_id, local, registration, created_ms, updated_ms) VALUES ('n1', 1, '{}', 1, 1), ('n2', 0, '{}', 1, 1), ('n3', 1, '{}', 1, 1);" +
          "INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES ('i1', 'claim', 'note', 'One', 'n1', 1);" +
          "INSERT INTO votes (voter, item_id, value, phase, doc, created_ms) VALUES ('n1', 'i1', 'yes', 'vote', '{}', 1), ('n3', 'i1', 'no', 'vote', '{}', 1);" +
          "INSERT INTO events (kind, author, subject, payload, created_ms) VALUES ('node', 'n1', 'n1', '{}', 1);",
      );
    } finally {
      await connection.end();
    }
    const { store, dispose } = await openPostgresRelayStore({ database });
    try {
      expect(await store.plainData.counts.totals()).toEqual({ nodes: 3, nodes_registered_here: 2, items: 1, votes: 2, events: 1, peers: 0 });
      // The relay deletes none of these rows; one deleted by hand is still uncounted at once, and
      // a row written by a session whose search_path is not the relay's (an operator's psql) counts.
      await store.plainSql.run("DELETE FROM votes WHERE voter = 'n3'");
      await store.plainSql.run("DELETE FROM nodes WHERE node_id = 'n3'");
      const operator = new pg.Client(pgConnection(database.url));
      await operator.connect();
      // A node too: its insert also fires the membership trigger (whose table it names by schema).
      await operator
        .query("INSERT INTO relay.events (kind, author, subject, payload, created_ms) VALUES ('node', 'n2', 'n2', '{}', 2); INSERT INTO relay.nodes (node_id, local, registration, created_ms, updated_ms) VALUES ('n4', 1, '{}', 2, 2)")
        .finally(() => operator.end());
      expect(await store.plainData.counts.totals()).toEqual({ nodes: 3, nodes_registered_here: 2, items: 1, votes: 1, events: 2, peers: 0 });
    } finally {
      await dispose();
    }
  });

  it('uses pg_trgm where it is already installed, in a schema outside the search path', async () => {
    const { store, dispose } = await migratedAfter('CREATE EXTENSION pg_trgm SCHEMA public');
    try {
      expect(await store.plain(searchIndexOf(store.sql))).toBe('pg_trgm');
      expect(await store.plainSql.values("SELECT indexname FROM pg_indexes WHERE schemaname = 'relay' AND indexname LIKE '%trgm' ORDER BY indexname")).toEqual(['items_title_trgm', 'nodes_about_trgm', 'nodes_name_trgm']);
    } finally {
      await dispose();
    }
  });
});
