import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runMigrations, schemaVersionOf } from '../storage/run-migrations.js';
import { relayMigrations } from '../storage/relay/relay-migrations.js';
import { RELAY_PAGE_CACHE_KIB, RelayStore } from './relay-store.js';

const dirs: string[] = [];
const dir = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'hilbench-relay-store-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('RelayStore schema', () => {
  it('records the schema version of a new database', async () => {
    const store = new RelayStore(dir());
    expect(schemaVersionOf(store.db)).toBe(relayMigrations.length);
    store.close();
  });

  it("keeps SQLite's own default page cache, not better-sqlite3's 16 MB (decision 1140: a commit after a page split walks it all)", async () => {
    const store = new RelayStore(dir());
    expect(RELAY_PAGE_CACHE_KIB).toBe(2000);
    expect(store.db.pragma('cache_size', { simple: true })).toBe(-RELAY_PAGE_CACHE_KIB);
    store.close();
  });

  it('opens a relay database from before the migration runner and keeps its rows', async () => {
    // Before the runner the relay ran its schema script, unversioned, on every start: the tables exist
    // and no schema_version does. The baseline must adopt such a file, not fail on it or empty it.
    const dataDir = dir();
    const old = new Database(path.join(dataDir, 'relay.sqlite'));
    old.exec(baselineSql());
    old
      .prepare("INSERT INTO nodes (node_id, local, registration, created_ms, updated_ms) VALUES ('n1', 1, '{}', 1, 1)")
      .run();
    expect(old.prepare("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'schema_version'").get()).toEqual({ n: 0 });
    old.close();

    const store = new RelayStore(dataDir);
    expect(schemaVersionOf(store.db)).toBe(relayMigrations.length);
    expect(store.db.prepare('SELECT node_id FROM nodes').all()).toEqual([{ node_id: 'n1' }]);
    // The membership triggers still count (the baseline's INSERT OR IGNORE kept the old counter).
    expect(store.db.prepare('SELECT version FROM membership').get()).toEqual({ version: 1 });
    store.close();
  });

  it('indexes for search the items and nodes a database held before the search index (decision 0505)', async () => {
    const dataDir = dir();
    const old = new Database(path.join(dataDir, 'relay.sqlite'));
    runMigrations(old, relayMigrations.slice(0, 4));
    old.prepare("INSERT INTO nodes (node_id, local, name, about, registration, listed, created_ms, updated_ms) VALUES ('n1', 1, 'Alice', 'uno bench', '{}', 1, 1, 1)").run();
    old.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES ('i1', 'claim', 'note', 'The Uno bench resets', 'n1', 1)").run();
    old.close();

    const store = new RelayStore(dataDir);
    expect((await store.plainData.items.searchTitles('%uno b%', 10)).map((i) => i.item_id)).toEqual(['i1']);
    expect((await store.plainData.nodes.searchListed('%UNO%', 10)).map((n) => n.node_id)).toEqual(['n1']);
    // The index holds what the tables hold, token for token (FTS5 compares them).
    store.db.exec("INSERT INTO items_search (items_search) VALUES ('integrity-check'); INSERT INTO nodes_search (nodes_search) VALUES ('integrity-check');");
    store.close();
  });

  it('counts the nodes registered here that a database held before they were kept (decision 1100)', async () => {
    const dataDir = dir();
    const old = new Database(path.join(dataDir, 'relay.sqlite'));
    runMigrations(old, relayMigrations.slice(0, 6));
    const insert = old.prepare("INSERT INTO nodes (node_id, local, registration, created_ms, updated_ms) VALUES (?, ?, '{}', 1, 1)");
    for (const [id, local] of [['n1', 1], ['n2', 0], ['n3', 1]] as const) insert.run(id, local);
    old.close();

    const store = new RelayStore(dataDir);
    expect(await store.plainData.counts.totals()).toMatchObject({ nodes: 3, nodes_registered_here: 2 });
    await store.plainData.nodes.markLocal('n2', null, 2);
    expect(await store.plainData.counts.totals()).toMatchObject({ nodes: 3, nodes_registered_here: 3 });
    await store.close();
  });

  it('refuses a relay database written by a newer hilbench', async () => {
    const dataDir = dir();
    new RelayStore(dataDir).close();
    const db = new Database(path.join(dataDir, 'relay.sqlite'));
    db.prepare('UPDATE schema_version SET version = ?').run(relayMigrations.length + 1);
    db.close();
    expect(() => new RelayStore(dataDir)).toThrow(/^the relay database has schema version \d+, newer than this hilbench understands/);
  });
});

/** The baseline step's SQL, run by hand: exactly the script the relay used to run. */
function baselineSql(): string {
  const step = relayMigrations[0]!.up().next();
  if (step.done) throw new Error('the baseline step runs no script');
  return step.value.sql;
}

describe('RelayStore savepoints', () => {
  it('passes on the error of a statement that ended the whole transaction, with nothing committed', async () => {
    // SQLite may answer SQLITE_FULL or an I/O error by rolling back the whole transaction, not only
    // the statement (sqlite.org/lang_transaction.html, "Response To Errors Within A Transaction"):
    // the steps below do what SQLite does then, so the case does not depend on filling a disk.
    const store = new RelayStore(dir());
    try {
      const full = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
      const seen: boolean[] = [];
      const tx = store.tx(function* () {
        try {
          yield* store.savepoint(function* () {
            store.db.prepare("INSERT INTO nodes (node_id, local, registration, created_ms, updated_ms) VALUES ('n1', 1, '{}', 1, 1)").run();
            store.db.exec('ROLLBACK');
            yield* [];
            throw full;
          });
        } finally {
          seen.push(store.inTransaction);
        }
      });
      // Not "no such savepoint" from a ROLLBACK TO with no transaction left: the error that ended it.
      await expect(tx).rejects.toBe(full);
      expect(seen).toEqual([false]);
      expect(store.db.prepare('SELECT COUNT(*) AS n FROM nodes').get()).toEqual({ n: 0 });
    } finally {
      await store.close();
    }
  });
});
