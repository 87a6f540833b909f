import { performance } from 'node:perf_hooks';
import { systemClock } from '../core/clock.js';
import { defaultThreshold, normalizeQuorumSet, type QuorumSet } from '../core/relay/quorum-set.js';
import { generateNodeKey, type NodeKey } from '../core/relay/node-id.js';
import { signVote, type Vote } from '../core/relay/vote.js';
import { RelayStore } from '../server/relay/relay-store.js';
import { Voting } from '../server/relay/domain/voting.js';
import { tempDataDir } from '../test/support/relay-test-kit.js';

/**
 * What a bulletin read of a node other than the relay's costs on a large item (decision 1080), in
 * process on SQLite, the same work `GET /items/{id}/bulletin/{node}` does inside its `store.plain`:
 * `--voters N` voters (default 2000), each with a slice of the next 20 around the ring at 67 %,
 * each signed `vote` then `accept` yes; the relay node's slice is the first 100 voters. Then, ms
 * per read: one voter's bulletin read again and again with nothing new, `--distinct` other voters'
 * read once each, a node that never voted, and a read after each of 50 new statements. Then, on
 * a second item, a round of first statements that each replace the voter's published slice (every
 * voter published the ring slice shifted by one; each votes yes under the unshifted one), one
 * transaction each as the ingest writes them: ms per statement stored (`Voting.storeVote`, which
 * holds the voter's floor first).
 * Not part of `npm run bench`: a before/after figure for a decision.
 * `npx tsx perf/relay-bulletin-reads.ts [--voters N] [--reads N] [--distinct N]`.
 */
function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
}

const voters = option('voters', 2000);
const reads = option('reads', 200);
const distinct = option('distinct', 200);
const sliceSize = 20;
const item = 'ab'.repeat(32);

const keys: NodeKey[] = Array.from({ length: voters }, () => generateNodeKey());
const ids = keys.map((k) => k.nodeId);
const sliceOf = (k: number): QuorumSet => {
  const v = Array.from({ length: sliceSize }, (_, j) => ids[(k + 1 + j) % voters] as string);
  return normalizeQuorumSet({ t: defaultThreshold(v.length), v, i: [] });
};
const sign = (k: number, phase: 'vote' | 'accept', atMs: number): Vote =>
  signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: ids[k] as string, value: 'yes', phase, slice: sliceOf(k), created_at: Math.floor(atMs / 1000) }, (keys[k] as NodeKey).secretKey);

const data = tempDataDir('bulletin-reads-');
const store = new RelayStore(data.dir);
try {
  const selfSlice = normalizeQuorumSet({ t: defaultThreshold(100), v: ids.slice(0, 100), i: [] });
  const voting = new Voting({ store, clock: systemClock, selfKey: generateNodeKey(), selfSlice });
  store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 't', ?, 0)").run(item, ids[0]);
  let nowMs = Date.UTC(2026, 10, 30, 8);
  // The first `voters - 50` vote and accept now; the last 50 accept one by one during the measure.
  for (const phase of ['vote', 'accept'] as const) {
    const signed = Array.from({ length: phase === 'vote' ? voters : voters - 50 }, (_, k) => sign(k, phase, nowMs));
    await store.tx(function* () {
      for (const vote of signed) yield* voting.storeVote(vote, null, nowMs);
    });
  }
  const statements = (await store.plain(voting.statements(item))).length;
  const read = async (node: string) => {
    const started = performance.now();
    const bulletin = await store.plain(voting.bulletin(item, node));
    return { ms: performance.now() - started, state: bulletin.state };
  };
  const summary = (label: string, ms: number[], state: string) => {
    const sorted = [...ms].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)] as number;
    const total = ms.reduce((a, b) => a + b, 0);
    console.log(`${label.padEnd(58)} ${String(ms.length).padStart(4)} reads  first ${(ms[0] as number).toFixed(2).padStart(8)} ms  median ${median.toFixed(3).padStart(8)} ms  total ${total.toFixed(0).padStart(6)} ms  (${state})`);
  };
  console.log(`${voters} voters, ${statements} statements, slices of ${sliceSize}; load average ${(await import('node:os')).loadavg().map((l) => l.toFixed(2)).join(' ')}`);

  const again: number[] = [];
  let state = '';
  for (let r = 0; r < reads; r++) ({ ms: again[r] as number, state } = await read(ids[0] as string));
  summary("one voter's bulletin, read again and again", again, state);

  const others: number[] = [];
  for (let r = 0; r < distinct; r++) ({ ms: others[r] as number, state } = await read(ids[1 + r] as string));
  summary('other voters, one read each', others, state);

  const stranger = generateNodeKey().nodeId;
  const strangers: number[] = [];
  for (let r = 0; r < reads; r++) ({ ms: strangers[r] as number, state } = await read(stranger));
  summary('a node that never voted, read again and again', strangers, state);

  const afterWrites: number[] = [];
  for (let k = voters - 50; k < voters; k++) {
    nowMs += 1000;
    const vote = sign(k, 'accept', nowMs);
    await store.tx(voting.storeVote(vote, null, nowMs));
    ({ ms: afterWrites[afterWrites.length] as number, state } = await read(ids[0] as string));
  }
  summary("one voter's bulletin after each of 50 new statements", afterWrites, state);

  const second = 'cd'.repeat(32);
  store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 't', ?, 0)").run(second, ids[0]);
  await store.tx(function* () {
    for (let k = 0; k < voters; k++) yield* voting.setSlice(ids[k] as string, sliceOf((k + 1) % voters), false, nowMs);
  });
  const firsts: number[] = [];
  for (let k = 0; k < voters; k++) {
    const vote = signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item: second, voter: ids[k] as string, value: 'yes', phase: 'vote', slice: sliceOf(k), created_at: Math.floor(nowMs / 1000) }, (keys[k] as NodeKey).secretKey);
    const started = performance.now();
    await store.tx(voting.storeVote(vote, null, nowMs));
    firsts.push(performance.now() - started);
  }
  summary('first statements replacing the published slice (ms per store)', firsts.slice(-200), 'the last 200');
} finally {
  await store.close();
  data.remove();
}
