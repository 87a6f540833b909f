import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { likeOf } from '../server/storage/relay/relay-sql.js';
import { searchIndexOf } from '../server/storage/relay/trigram-prefilter.js';
import { RelayStore } from '../server/relay/relay-store.js';
import { createTestDatabase } from '../test/support/postgres-test-database.js';
import { type BenchRow, markdownTable, nowMs, percentile } from './measure.js';

/**
 * GET /search's item query over a relay holding `items` items (decisions 0505, 0506): through the
 * trigram index against the plain LIKE scan it replaced, alternately in the same run, on SQLite and
 * (when it answers) PostgreSQL. For a q matching one title, the case the index is for (a search
 * that matches little used to read every title), and for one matching many, its worst case. `npm run bench` calls `runRelaySearchBench()`;
 * run this file alone with `npx tsx perf/relay-search.bench.ts`.
 */
export async function runRelaySearchBench(options: { items?: number; rounds?: number } = {}): Promise<BenchRow[]> {
  const items = options.items ?? 100_000;
  const rounds = options.rounds ?? 15;
  const rows: BenchRow[] = [];
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hilbench-perf-search-'));
  const sqlite = new RelayStore(dataDir);
  try {
    rows.push(...(await measure(sqlite, 'SQLite', items, rounds)));
  } finally {
    await sqlite.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  try {
    database = await createTestDatabase();
  } catch (err) {
    rows.push({ name: 'search on PostgreSQL', value: Number.NaN, unit: '', note: `skipped: PostgreSQL did not answer (${(err as Error).message})` });
    return rows;
  }
  const postgres = await RelayStore.openPostgres(database.url);
  try {
    rows.push(...(await measure(postgres, 'PostgreSQL', items, rounds)));
  } finally {
    await postgres.close();
    await database.drop();
  }
  return rows;
}

/** A title per item, the same on every run: a few words and a pseudo-random hex tag. */
function titleOf(k: number): string {
  const words = ['uno', 'pico', 'reset', 'bench', 'uart', 'flash', 'timing', 'boot'];
  const tag = (Math.imul(k + 1, 2_654_435_761) >>> 0).toString(16).padStart(8, '0');
  return `${words[k % 8]} ${words[(k >> 3) % 8]} ${tag} run ${k}`;
}

async function fill(store: RelayStore, items: number): Promise<void> {
  const batch = 1000;
  for (let from = 0; from < items; from += batch) {
    await store.tx(function* () {
      for (let k = from; k < Math.min(items, from + batch); k++) {
        yield* store.data.items.insert({ item_id: k.toString(16).padStart(64, '0'), type: 'claim', kind: 'note', title: titleOf(k), body: '', file_bytes: null, media_type: null, author: 'f'.repeat(64), bot_id: null, origin: null, created_ms: k, authorship: null });
      }
    });
  }
  if (store.dialect === 'postgres') await store.plainSql.run('ANALYZE items');
}

async function measure(store: RelayStore, label: string, items: number, rounds: number): Promise<BenchRow[]> {
  await fill(store, items);
  // One item's tag, in the other case: the search the index is for. And a word in about a quarter
  // of the titles: the index's worst case, where reading the candidates costs more than the scan.
  const rare = titleOf(Math.floor(items * 0.77)).split(' ')[2]!.toUpperCase();
  return [...(await compare(store, label, rare, 'matching 1', rounds)), ...(await compare(store, label, 'bench', 'matching about 23 %', rounds))];
}

async function compare(store: RelayStore, label: string, q: string, matching: string, rounds: number): Promise<BenchRow[]> {
  const pattern = `%${q}%`;
  const limit = 50;
  const indexed = () => store.plainData.items.searchTitles(pattern, limit);
  // The statement before the index; the column wrapped so that no index serves it.
  const scan = () => store.plainSql.allOnce(`SELECT item_id, type, kind, title, author, created_ms FROM items WHERE (title || '') ${likeOf(store.sql)} ? ESCAPE '\\' ORDER BY created_ms, item_id LIMIT ?`, pattern, limit);
  if (JSON.stringify(await indexed()) !== JSON.stringify(await scan())) throw new Error(`${label}: the indexed search and the scan disagree for ${q}`);
  const indexedMs: number[] = [];
  const scanMs: number[] = [];
  for (let r = 0; r < rounds; r++) {
    for (const [fn, out] of [[indexed, indexedMs], [scan, scanMs]] as const) {
      const start = nowMs();
      await fn();
      out.push(nowMs() - start);
    }
  }
  const of = `q "${q}" (${[...q].length} characters) ${matching} of the titles, first ${limit}; median of ${rounds}`;
  return [
    { name: `search ${label}, q ${matching}: plain LIKE scan`, value: percentile(scanMs, 50), unit: 'ms', note: of },
    { name: `search ${label}, q ${matching}: through the index (${await store.plain(searchIndexOf(store.sql))})`, value: percentile(indexedMs, 50), unit: 'ms', note: of },
    { name: `search ${label}, q ${matching}: scan / index`, value: percentile(scanMs, 50) / percentile(indexedMs, 50), unit: '×', note: 'measured alternately in the same run' },
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stdout.write(`${markdownTable(await runRelaySearchBench())}\n`);
}
