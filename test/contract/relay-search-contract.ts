import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ItemRepository } from '../../server/storage/relay/item-repository.js';
import { NodeRepository } from '../../server/storage/relay/node-repository.js';
import { type RelaySql, type PlainRelaySql, likeOf } from '../../server/storage/relay/relay-sql.js';
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
async function plainSearch(q: PlainRelaySql, pattern: string, limit: number): Promise<{ items: unknown[]; nodes: unknown[] }> {
  const like = likeOf(q);
  return {
    items: await q.allOnce(`SELECT item_id, type, kind, title, author, created_ms FROM items WHERE (title || '') ${like} ? ESCAPE '\\' ORDER BY created_ms, item_id LIMIT ?`, pattern, limit),
    nodes: await q.allOnce(`SELECT * FROM nodes WHERE listed = 1 AND ((name || '') ${like} ? ESCAPE '\\' OR (about || '') ${like} ? ESCAPE '\\') ORDER BY created_ms, node_id LIMIT ?`, pattern, pattern, limit),
  };
}

async function stage(store: RelayStore, s: Scene): Promise<void> {
  const { items, nodes } = store.plainData;
  await store.plainSql.run('DELETE FROM items');
  await store.plainSql.run('DELETE FROM nodes');
  for (const [k, item] of s.items.entries()) await items.insert({ item_id: id(k), type: 'claim', kind: 'note', title: item.title, body: '', file_bytes: null, media_type: null, author: id(999), bot_id: null, origin: null, created_ms: item.createdMs, authorship: null });
  for (const [k, n] of s.nodes.entries()) {
    await nodes.insert({ nodeId: id(k), local: true, name: n.name, registration: '{}', nowMs: n.createdMs });
    await nodes.updateProfile(id(k), { name: null, about: n.about }, n.createdMs);
    await nodes.updateDirectory(id(k), { listed: n.listed, phoneDiscoverable: null }, n.createdMs);
  }
  // Changed and removed rows: the index must follow them (its triggers).
  for (const [k, n] of s.nodes.entries()) if (n.renamedTo !== null) await nodes.updateProfile(id(k), { name: n.renamedTo, about: n.renamedTo }, n.createdMs);
  for (const k of s.deleted) await store.plainSql.run('DELETE FROM items WHERE item_id = ?', id(k));
}

/** Runs `read` with PostgreSQL's sequential scans off: it would rightly scan tables this small, and the index must answer. */
async function indexed<T>(store: RelayStore, read: () => Promise<T>): Promise<T> {
  if (store.dialect !== 'postgres') return read();
  // A pool's connection: the setting must hold on the one the reads run on (the relay's pool runs
  // one rule at a time, and these reads run on the same idle connection in turn).
  await store.plainSql.run('SET enable_seqscan = off');
  try {
    return await read();
  } finally {
    await store.plainSql.run('RESET enable_seqscan');
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
async function planOf(q: PlainRelaySql, statement: { text: string; args: unknown[] }): Promise<string[]> {
  if (q.dialect === 'sqlite') return (await q.allOnce<{ detail: string }>(`EXPLAIN QUERY PLAN ${statement.text}`, ...statement.args)).map((r) => r.detail);
  return (await q.allOnce<{ 'QUERY PLAN': string }>(`EXPLAIN ${statement.text}`, ...statement.args)).map((r) => r['QUERY PLAN']);
}

/**
 * GET /search's queries through a trigram index (decisions 0505, 0506) answer exactly what the
 * plain LIKE scan answered: same rows, same order, same limit, each dialect's case rules.
 */
export function describeRelaySearchContract(name: string, open: OpenRelayStore, options: { numRuns: number }): void {
  describe(`relay search contract: ${name}`, () => {
    const store = freshStorePerTest(open);

    it('finds through the index exactly what the plain LIKE finds, on random texts and queries', { timeout: 120_000 }, async () => {
      const s = store();
      await fc.assert(
        fc.asyncProperty(scene, async (sc) => {
          await stage(s, sc);
          for (const search of sc.searches) {
            const pattern = `%${escapeLike(search.q)}${search.wildcard}${escapeLike(search.tail)}%`;
            const found = await indexed(s, async () => ({ items: await s.plainData.items.searchTitles(pattern, search.limit), nodes: await s.plainData.nodes.searchListed(pattern, search.limit) }));
            expect(found).toEqual(await plainSearch(s.plainSql, pattern, search.limit));
          }
        }),
        { numRuns: options.numRuns },
      );
    });

    it('reads the trigram index, not the whole table, for a query of three characters or more', async () => {
      const s = store();
      const available = s.dialect === 'sqlite' || (await s.plainSql.value("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'")) !== undefined;
      // Where pg_trgm exists (it does wherever these tests run on a superuser's database), it is used.
      expect(await s.plain(searchIndexOf(s.sql))).toBe(s.dialect === 'sqlite' ? 'fts5-trigram' : available ? 'pg_trgm' : 'scan');
      if (!available) return;
      const { sql, last } = recording(s.sql);
      await indexed(s, async () => {
        await s.plain(new ItemRepository(sql).searchTitles('%bench%', 10));
        const itemsPlan = (await planOf(s.plainSql, last())).join('\n');
        await s.plain(new NodeRepository(sql).searchListed('%alice%', 10));
        const nodesPlan = (await planOf(s.plainSql, last())).join('\n');
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
        await s.plain(new ItemRepository(sql).searchTitles('%be%', 10));
        if (s.dialect === 'sqlite') expect((await planOf(s.plainSql, last())).join('\n')).not.toMatch(/items_search/);
      });
    });
  });
}
