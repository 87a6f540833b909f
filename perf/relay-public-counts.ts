import { performance } from 'node:perf_hooks';
import { systemClock } from '../core/clock.js';
import { memoryLogger } from '../server/http/logger.js';
import { RelayStore } from '../server/relay/relay-store.js';
import { startRelayServer, tempDataDir } from '../test/support/relay-test-kit.js';

/**
 * What the relay's public counts cost a request on SQLite (decision 1100), where every read runs on
 * the event loop: a relay with `--rows N` nodes (half registered here), items, votes and events
 * (default 100 000 each), then, ms per call, the six counts as GET /network read them before (a
 * COUNT(*) of each table, the local nodes by a scan) and as it reads them now
 * (`RelayCountRepository.totals`), each on a store just opened (nothing in SQLite's page cache) and
 * again and again; then `--requests N` GET /network, GET /nodes, a site page and GET /nodes/{id} over HTTP from a
 * relay on that data. Not part of `npm run bench`: a before/after figure for a decision.
 * `npx tsx perf/relay-public-counts.ts [--rows N] [--requests N]`.
 */
function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
}

const rows = option('rows', 100_000);
const requests = option('requests', 50);
/** A 64-hex id of row `n` of a table (nodes 'a', items 'b'), as the relay's ids are. */
const id = (table: 'n' | 'i', n: number) => `${table === 'n' ? 'a' : 'b'}${n.toString(16)}`.padStart(64, '0');

/** Median and 90th percentile of `ms`, as text. */
function summary(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number).toFixed(2);
  return `median ${at(0.5)} ms, p90 ${at(0.9)} ms (${ms.length} calls)`;
}

async function timed(times: number, call: () => Promise<unknown>): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    await call();
    ms.push(performance.now() - started);
  }
  return ms;
}

const data = tempDataDir('relay-public-counts-');
try {
  const filling = new RelayStore(data.dir);
  const db = filling.db;
  const doc = JSON.stringify({ schema: 'x.vote/1', sig: 'ab'.repeat(64), slice_hash: 'cd'.repeat(32), created_at: 1_800_000_000 });
  db.transaction(() => {
    const node = db.prepare("INSERT INTO nodes (node_id, local, name, registration, created_ms, updated_ms) VALUES (?, ?, 'a node', ?, 1, 1)");
    const item = db.prepare("INSERT INTO items (item_id, type, kind, title, body, author, created_ms) VALUES (?, 'claim', 'statement', ?, 'a body of a claim', ?, 1)");
    const vote = db.prepare("INSERT INTO votes (voter, item_id, value, phase, doc, created_ms) VALUES (?, ?, 'yes', 'vote', ?, 1)");
    const event = db.prepare("INSERT INTO events (kind, author, subject, payload, created_ms) VALUES ('vote', ?, ?, ?, 1)");
    for (let n = 0; n < rows; n++) {
      node.run(id('n', n), n % 2, doc);
      item.run(id('i', n), `Title ${n}`, id('n', n));
      vote.run(id('n', n), id('i', n), doc);
      event.run(id('n', n), id('i', n), doc);
    }
  })();
  await filling.close();
  console.log(`${rows} nodes (half registered here), items, votes and events`);

  const walk = async (store: RelayStore) => {
    const d = store.plainData;
    return { nodes: await d.nodes.count(), nodes_registered_here: await d.nodes.countLocal(), items: await d.items.count(), votes: await d.votes.count(), events: await d.events.count(), peers: await d.peers.count() };
  };
  for (const [name, read] of [
    ['walked (before)', walk],
    ['kept (now)', (store: RelayStore) => store.plainData.counts.totals()],
  ] as const) {
    const cold: number[] = [];
    for (let i = 0; i < 10; i++) {
      const store = new RelayStore(data.dir);
      cold.push(...(await timed(1, () => read(store))));
      await store.close();
    }
    const store = new RelayStore(data.dir);
    const warm = await timed(50, () => read(store));
    console.log(`${name}: ${JSON.stringify(await read(store))}`);
    await store.close();
    console.log(`  on a store just opened: ${summary(cold)}`);
    console.log(`  again and again:        ${summary(warm)}`);
  }

  const relay = await startRelayServer({ clock: systemClock, dataDir: data.dir, logger: memoryLogger() });
  try {
    for (const [name, url] of [
      ['GET /network', `${relay.baseUrl}/network`],
      ['GET /nodes', `${relay.baseUrl}/nodes`],
      ['GET / (site)', `${relay.humanUrl}/`],
      // A node's page counts its items and votes.
      ['GET /nodes/{id}', `${relay.baseUrl}/nodes/${id('n', 1)}`],
    ] as const) {
      const ms = await timed(requests, async () => {
        const answer = await fetch(url);
        if (answer.status !== 200) throw new Error(`${name} answered ${answer.status}`);
        await answer.arrayBuffer();
      });
      console.log(`${name}: ${summary(ms)}`);
    }
  } finally {
    await relay.close();
  }
} finally {
  data.remove();
}
