import { pathToFileURL } from 'node:url';
import { type BenchRow, markdownTable, nowMs as hostNowMs } from './measure.js';
import { type QuorumSet, defaultThreshold } from '../core/relay/quorum-set.js';
import { type Vote, signVote, verifyVote, voteSigningBytes } from '../core/relay/vote.js';
import { ed25519Verifiers, signEd25519 } from '../core/relay/ed25519.js';
import { generateNodeKey, nodeIdToPublicKey } from '../core/relay/node-id.js';
import { GrowingTally } from '../core/relay/growing-tally.js';
import { tally } from '../core/relay/tally.js';

/**
 * Relay core speed: Ed25519 verifications per second with each candidate verifier (the numbers behind
 * docs/decisions/0101-ed25519-verifier.md), whole-vote verification, and the time of one scp-s5 tally
 * for 100 and 1000 nodes. `npm run bench` calls `runRelayCoreBench()`; run this file alone with
 * `npx tsx perf/relay-core.bench.ts`.
 */
export type { BenchRow };

export interface RelayCoreBenchOptions {
  /** Wall time spent on each measurement, milliseconds. */
  budgetMs?: number;
  /** Monotonic milliseconds; injectable like every clock in hilbench. */
  nowMs?: () => number;
}

/** Runs `fn` repeatedly for about `budgetMs`; returns operations per second. */
function opsPerSecond(fn: () => void, budgetMs: number, nowMs: () => number): number {
  for (let k = 0; k < 20; k++) fn(); // warm up the JIT and the key caches
  const start = nowMs();
  let ops = 0;
  while (nowMs() - start < budgetMs) {
    for (let k = 0; k < 10; k++) fn();
    ops += 10;
  }
  return (ops * 1000) / (nowMs() - start);
}

/**
 * A network of `n` nodes in which everyone voted and accepted yes. Slices at 67 %: of every other
 * node (`sliceSize` undefined), or of the next `sliceSize` nodes around a ring, as the issue 18
 * goals measure networks of 10 000 (full slices of 10 000 would not fit in memory).
 */
function tallyScene(n: number, sliceSize?: number): { self: string; statements: Vote[]; sliceOf: (node: string) => QuorumSet | undefined } {
  const names = Array.from({ length: n }, (_, k) => k.toString(16).padStart(64, '0'));
  const slices = new Map<string, QuorumSet>(
    names.map((self, k) => {
      const others = sliceSize === undefined ? names.filter((m) => m !== self) : Array.from({ length: sliceSize }, (_, j) => names[(k + 1 + j) % n] as string);
      return [self, { t: defaultThreshold(others.length), v: others, i: [] }];
    }),
  );
  const statements: Vote[] = names.flatMap((voter) =>
    (['vote', 'accept'] as const).map((phase) => ({
      schema: 'x.vote/1' as const,
      scheme: 'scp-s5' as const,
      item: 'ab'.repeat(32),
      voter,
      value: 'yes' as const,
      phase,
      slice_hash: '0'.repeat(64),
      created_at: 0,
      sig: 'A'.repeat(86),
    })),
  );
  return { self: names[0] as string, statements, sliceOf: (node) => slices.get(node) };
}

/** `items` in a random order, the same on every run (a fixed-seed linear congruential generator). */
function seededShuffle<T>(items: readonly T[]): T[] {
  const out = [...items];
  let seed = 18;
  for (let k = out.length - 1; k > 0; k--) {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
    const j = Math.floor((seed / 4_294_967_296) * (k + 1));
    [out[k], out[j]] = [out[j] as T, out[k] as T];
  }
  return out;
}

/** Measures and returns the rows; `npm run bench` (perf/run-all.ts) prints them with the others. */
export function runRelayCoreBench(options: RelayCoreBenchOptions = {}): BenchRow[] {
  const budgetMs = options.budgetMs ?? 1000;
  const nowMs = options.nowMs ?? hostNowMs;
  const key = generateNodeKey();
  const publicKey = nodeIdToPublicKey(key.nodeId);
  const message = new TextEncoder().encode('x'.repeat(300)); // about the size of a vote's signed bytes
  const sig = signEd25519(message, key.secretKey);
  const other = generateNodeKey();
  const vote = signVote(
    {
      schema: 'x.vote/1',
      scheme: 'scp-s5',
      item: 'ab'.repeat(32),
      voter: key.nodeId,
      value: 'yes',
      phase: 'vote',
      slice: { t: 1, v: [other.nodeId], i: [] },
      created_at: 1_763_600_000,
    },
    key.secretKey,
  );
  const rows: BenchRow[] = [
    {
      name: 'Ed25519 verify, node:crypto (OpenSSL) — the relay verifier',
      value: opsPerSecond(() => ed25519Verifiers.nodeCrypto(sig, message, publicKey), budgetMs, nowMs),
      unit: 'verifications/s',
      note: 'one voter, key object cached',
    },
    {
      name: 'Ed25519 verify, @noble/ed25519 3 (strict)',
      value: opsPerSecond(() => ed25519Verifiers.noble(sig, message, publicKey), budgetMs, nowMs),
      unit: 'verifications/s',
      note: 'same fence, pure JS',
    },
    {
      name: 'verifyVote (canonical JSON + node:crypto)',
      value: opsPerSecond(() => verifyVote(vote), budgetMs, nowMs),
      unit: 'votes/s',
      note: `signed bytes ${voteSigningBytes(vote).length} B`,
    },
  ];
  for (const n of [100, 1000]) {
    const scene = tallyScene(n);
    const perSecond = opsPerSecond(
      () => tally({ self: scene.self, item: 'ab'.repeat(32), statements: scene.statements, sliceOf: scene.sliceOf, emitted: [] }),
      budgetMs,
      nowMs,
    );
    rows.push({
      name: `tally, ${n} nodes, 67 % symmetric slices, all voted and accepted`,
      value: 1000 / perSecond,
      unit: 'ms/tally',
      note: `${scene.statements.length} statements`,
    });
  }
  // The issue 18 goal: the full reference tally of one item at 10 000 nodes (slices of 20 at 67 %).
  for (const n of [100, 1000, 10_000]) {
    const scene = tallyScene(n, 20);
    const perSecond = opsPerSecond(
      () => tally({ self: scene.self, item: 'ab'.repeat(32), statements: scene.statements, sliceOf: scene.sliceOf, emitted: [] }),
      budgetMs,
      nowMs,
    );
    rows.push({
      name: `tally, ${n} nodes, slices of 20 at 67 % around a ring, all voted and accepted`,
      value: 1000 / perSecond,
      unit: 'ms/tally',
      note: `${scene.statements.length} statements; issue 18 goal at 10 000: under 50 ms`,
    });
  }
  // The incremental tally (GrowingTally): the whole round fed one statement at a time, the relay
  // node's bulletin read after each and its own statements added as the relay signs them; the cost
  // per statement, amortised over the round, next to one full tally of the same network. Votes
  // arrive around the ring, then accepts, the friendliest order for it (most voters arrive before
  // anyone they trust); the last row takes each phase in a shuffled order instead.
  const incrementalCases = [
    { n: 100, shuffled: false },
    { n: 1000, shuffled: false },
    { n: 10_000, shuffled: false },
    { n: 10_000, shuffled: true },
  ];
  for (const { n, shuffled } of incrementalCases) {
    const scene = tallyScene(n, 20);
    // Self (node 0) is not a voter here: it trusts up to 1000 of them, as a relay node's slice names at most 1000.
    const self = 'f'.repeat(64);
    const voters = scene.statements.filter((s) => s.phase === 'vote').map((s) => s.voter);
    const stride = Math.max(1, Math.ceil(n / 1000));
    const trusted = voters.filter((_, k) => k % stride === 0);
    const selfSlice: QuorumSet = { t: defaultThreshold(trusted.length), v: trusted, i: [] };
    const sliceOf = (node: string) => (node === self ? selfSlice : scene.sliceOf(node));
    const phase = (p: 'vote' | 'accept') => scene.statements.filter((s) => s.phase === p);
    const round = shuffled ? [...seededShuffle(phase('vote')), ...seededShuffle(phase('accept'))] : [...phase('vote'), ...phase('accept')];
    let state = '';
    const feed = () => {
      const growing = new GrowingTally(self, 'ab'.repeat(32), sliceOf);
      for (const statement of round) {
        growing.add(statement);
        for (const own of growing.bulletin().toEmit) growing.add({ item: statement.item, voter: self, ...own });
      }
      state = growing.bulletin().state;
    };
    // A round at 10 000 takes seconds: one to warm up, then whole rounds for about the budget.
    feed();
    const start = nowMs();
    let rounds = 0;
    while (rounds === 0 || nowMs() - start < budgetMs) {
      feed();
      rounds++;
    }
    rows.push({
      name: `incremental tally, ${n} nodes, slices of 20 at 67 % around a ring, ${shuffled ? 'shuffled, ' : ''}per statement`,
      value: (nowMs() - start) / rounds / round.length,
      unit: 'ms/statement',
      note: `${round.length} statements one by one, every vote then every accept${shuffled ? ', each phase in a shuffled order (fixed seed)' : ' in ring order'}, the relay node's bulletin after each; ends ${state}; issue 18 goal at 10 000: under 0.05 ms`,
    });
  }
  // A caller that re-creates slice objects on every lookup (e.g. JSON.parse from a database row)
  // misses maxQuorum's per-object compile cache: this row shows what that costs.
  const fresh = tallyScene(1000);
  const perSecondFresh = opsPerSecond(
    () =>
      tally({
        self: fresh.self,
        item: 'ab'.repeat(32),
        statements: fresh.statements,
        sliceOf: (node) => {
          const slice = fresh.sliceOf(node);
          return slice && { t: slice.t, v: slice.v, i: slice.i };
        },
        emitted: [],
      }),
    budgetMs,
    nowMs,
  );
  rows.push({
    name: 'tally, 1000 nodes, slice objects re-created on every lookup',
    value: 1000 / perSecondFresh,
    unit: 'ms/tally',
    note: 'no compile-cache hits: keep parsed slices in a Map',
  });
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(markdownTable(runRelayCoreBench()));
}
