import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ItemRepository } from '../../server/storage/relay/item-repository.js';
import { NodeRepository } from '../../server/storage/relay/node-repository.js';
import { type RelaySql, type SyncRelaySql, likeOf } from '../../server/storage/relay/relay-sql.js';
import { searchIndexOf } from '../../server/storage/relay/trigram-prefilter.js';
import type { RelayStore } from '../../server/relay/relay-store.js';
import { freshStorePerTest, type OpenRelayStore } from './relay-store-contract.js';

const id = (n: number) => n.toString(16).padStart(64, '0');
/** What GET /search makes of q (identity-routes.ts). */
const escapeLike = (q: string) => q.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * Characters where an index could disagree with LIKE: ASCII and non-ASCII case pairs (SQLite's
 * LIKE folds ASCII only, the trigram tokenizer all of them), the Kelvin sign and dotted/dotless i
 * (whose folding differs between folding tables), an astral character, LIKE's wildcards and
 * escape, FTS5's quote, a space. Few of them, so random queries hit random texts.
 */
const CHARS = ['a', 'A', 'b', 'B', 'c', 'é', 'É', 'ß', 'ẞ', 'K', 'k', 'İ', 'i', 'ı', '😀', '%', '_', '\\', '"', ' ', '*'];
const text = fc.oneof({ weight: 4, arbitrary: fc.string({ unit: fc.constantFrom(...CHARS), maxLength: 12 }) }, { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 8 }) });
const query = fc.string({ unit: fc.constantFrom(...CHARS), maxLength: 5 });

interface Scene {
  items: { title: string; createdMs: number }[];
  nodes: { name: string; about: string; listed: boolean; createdMs: number; renamedTo: string | null }[];
  deleted: number[];
  searches: { q: string; wildcard: '' | '%' | '_'; tail: string; limit: number }[];
}
const scene: fc.Arbitrary<Scene> = fc.record({
  items: fc.array(fc.record({ title: text, createdMs: fc.integer({ min: 0, max: 4 }) }), { maxLength: 25 }),
  nodes: fc.array(fc.record({ name: text, about: text, listed: fc.boolean(), createdMs: fc.integer({ min: 0, max: 4 }), renamedTo: fc.option(text) }), { maxLength: 15 }),
  deleted: fc.array(fc.nat(30), { maxLength: 4 }),
  // The route's `%q%`, and patterns with a wildcard inside (several literal runs).
  searches: fc.array(fc.record({ q: query, wildcard: fc.constantFrom('' as const, '%' as const, '_' as const), tail: query, limit: fc.integer({ min: 1, max: 6 }) }), { minLength: 1, maxLength: 8 }),
});

/** The searches as they were before the index, with the column wrapped so no index can serve them. */
function plainSearch(q: SyncRelaySql, pattern: string, limit: number): { items: unknown[]; nodes: unknown[] } {
  const like = likeOf(q);
  return {
    items: q.allOnce(`SELECT item_id, type, kind, title, author, created_ms FROM items WHERE (title || '') ${like} ? ESCAPE '\\' ORDER BY created_ms, item_id LIMIT ?`, pattern, limit),
    nodes: q.allOnce(`SELECT * FROM nodes WHERE listed = 1 AND ((name || '') ${like} ? ESCAPE '\\' OR (about || '') ${like} ? ESCAPE '\\') ORDER BY created_ms, node_id LIMIT ?`, pattern, pattern, limit),
  };
}

function stage(store: RelayStore, s: Scene): void {
  const { items, nodes } = store.syncData;
  store.syncSql.run('DELETE FROM items');
  store.syncSql.run('DELETE FROM nodes');
  s.items.forEach((item, k) => items.insert({ item_id: id(k), type: 'claim', kind: 'note', title: item.title, body: '', file_bytes: null, media_type: null, author: id(999), bot_id: null, origin: null, created_ms: item.createdMs, authorship: null }));
  s.nodes.forEach((n, k) => {
    nodes.insert({ nodeId: id(k), local: true, name: n.name, registration: '{}', nowMs: n.createdMs });
    nodes.updateProfile(id(k), { name: null, about: n.about }, n.createdMs);
    nodes.updateDirectory(id(k), { listed: n.listed, phoneDiscoverable: null }, n.createdMs);
  });
  // Changed and removed rows: the index must follow them (its triggers).
  s.nodes.forEach((n, k) => n.renamedTo !== null && nodes.updateProfile(id(k), { name: n.renamedTo, about: n.renamedTo }, n.createdMs));
  for (const k of s.deleted) store.syncSql.run('DELETE FROM items WHERE item_id = ?', id(k));
}

/** Runs `read` with PostgreSQL's sequential scans off: it would rightly scan tables this small, and the index must answer. */
function indexed<T>(store: RelayStore, read: () => T): T {
  if (store.dialect !== 'postgres') return read();
  store.syncSql.run('SET enable_seqscan = off');
  try {
    return read();
  } finally {
    store.syncSql.run('RESET enable_seqscan');
  }
}

/** A RelaySql that remembers the last statement read through `all`, to ask the database how it runs it. */
function recording(q: RelaySql): { sql: RelaySql; last: () => { text: string; args: unknown[] } } {
  let last: { text: string; args: unknown[] } | undefined;
  const sql: RelaySql = Object.assign(Object.create(null) as RelaySql, {
    dialect: q.dialect,
    run: (t: string, ...a: unknown[]) => q.run(t, ...a),
    get: (t: string, ...a: unknown[]) => q.get(t, ...a),
    value: (t: string, ...a: unknown[]) => q.value(t, ...a),
    values: (t: string, ...a: unknown[]) => q.values(t, ...a),
    allOnce: (t: string, ...a: unknown[]) => q.allOnce(t, ...a),
    count: (t: string, ...a: unknown[]) => q.count(t, ...a),
    all: (t: string, ...a: unknown[]) => {
      last = { text: t, args: a };
      return q.all(t, ...a);
    },
  });
  return { sql, last: () => last ?? { text: '', args: [] } };
}

/** The plan of a statement, one line per step. */
function planOf(q: SyncRelaySql, statement: { text: string; args: unknown[] }): string[] {
  if (q.dialect === 'sqlite') return q.allOnce<{ detail: string }>(`EXPLAIN QUERY PLAN ${statement.text}`, ...statement.args).map((r) => r.detail);
  return q.allOnce<{ 'QUERY PLAN': string }>(`EXPLAIN ${statement.text}`, ...statement.args).map((r) => r['QUERY PLAN']);
}

/**
 * GET /search's queries through a trigram index (decisions 0505, 0506) answer exactly what the
 * plain LIKE scan answered: same rows, same order, same limit, each dialect's case rules.
 */
export function describeRelaySearchContract(name: string, open: OpenRelayStore, options: { numRuns: number }): void {
  describe(`relay search contract: ${name}`, () => {
    const store = freshStorePerTest(open);

    it('finds through the index exactly what the plain LIKE finds, on random texts and queries', { timeout: 120_000 }, () => {
      const s = store();
      fc.assert(
        fc.property(scene, (sc) => {
          stage(s, sc);
          for (const search of sc.searches) {
            const pattern = `%${escapeLike(search.q)}${search.wildcard}${escapeLike(search.tail)}%`;
            const found = indexed(s, () => ({ items: s.syncData.items.searchTitles(pattern, search.limit), nodes: s.syncData.nodes.searchListed(pattern, search.limit) }));
            expect(found).toEqual(plainSearch(s.syncSql, pattern, search.limit));
          }
        }),
        { numRuns: options.numRuns },
      );
    });

    it('reads the trigram index, not the whole table, for a query of three characters or more', () => {
      const s = store();
      const available = s.dialect === 'sqlite' || s.syncSql.value("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'") !== undefined;
      // Where pg_trgm exists (it does wherever these tests run on a superuser's database), it is used.
      expect(s.run(searchIndexOf(s.sql))).toBe(s.dialect === 'sqlite' ? 'fts5-trigram' : available ? 'pg_trgm' : 'scan');
      if (!available) return;
      const { sql, last } = recording(s.sql);
      indexed(s, () => {
        s.run(new ItemRepository(sql).searchTitles('%bench%', 10));
        const itemsPlan = planOf(s.syncSql, last()).join('\n');
        s.run(new NodeRepository(sql).searchListed('%alice%', 10));
        const nodesPlan = planOf(s.syncSql, last()).join('\n');
        if (s.dialect === 'sqlite') {
          expect(itemsPlan).toMatch(/SCAN items_search VIRTUAL TABLE/);
          expect(itemsPlan).not.toMatch(/SCAN items\b(?!_search)/);
          expect(nodesPlan).toMatch(/SCAN nodes_search VIRTUAL TABLE/);
          expect(nodesPlan).not.toMatch(/SCAN nodes\b(?!_search)/);
        } else {
          expect(itemsPlan).toMatch(/Bitmap Index Scan on items_title_trgm/);
          expect(nodesPlan).toMatch(/Bitmap Index Scan on nodes_name_trgm[\s\S]*Bitmap Index Scan on nodes_about_trgm/);
        }
        // Shorter queries keep the scan: a trigram index cannot narrow them.
        s.run(new ItemRepository(sql).searchTitles('%be%', 10));
        if (s.dialect === 'sqlite') expect(planOf(s.syncSql, last()).join('\n')).not.toMatch(/items_search/);
      });
    });
  });
}
