import { fork } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type BenchRow, markdownTable, nowMs as hostNowMs, percentile } from './measure.js';
import { type BlockResult, IngestScene } from './relay-ingest-scene.js';

/**
 * Relay ingest speed through HTTP (issue 30, "Relay vote ingest against an honest floor"): signed
 * votes accepted per second by `POST /items/{id}/vote` (parse, signature check, store, the relay
 * node's tally and its own statements, the answer once the commit is on disk), against what a vote
 * must cost at least: `POST /me` (an authenticated write committed durably) plus one signature
 * check (`verifyVote` in the relay's process, over the same signed bytes, keys cached as in the
 * relay); and by 4 clients against `POST /me` and `GET /me` by 4 clients.
 *
 * Every relay (100, 1000 and 10 000 voters) runs at once, and the rounds are measured in blocks:
 * in each block, each relay runs a floor round and the ingest round it is a ratio to, of the same
 * number of requests, one after the other; the blocks repeat (ABAB...). Each goal is the median of
 * the ratios its blocks measured, so a load that comes and goes on a shared machine moves both
 * sides of a ratio alike. Counts that noise cannot move are reported beside the rates: fdatasyncs
 * and write transactions per accepted vote, and the CPU time of the relay's main thread (its event
 * loop) per request.
 *
 * The client is a child process (perf/relay-load-client.ts, keep-alive HTTP, one connection per
 * client), so it never shares the relay's event loop. Statements are signed before the blocks: a
 * vote, then an accept, per voter, in that order (every vote first, as a real network sends them).
 * Every relay ingests the same number of statements per mode (6 blocks of 400 by default): whole
 * items where they fit (100 and 1000 voters); at 10 000 voters, whose one item alone holds 20 000,
 * the votes and accepts of 1200 voters sampled evenly over all 10 000 (every key, row and index
 * lookup is one of the full network's; the bench stays bounded: a run with whole items of 20 000
 * had not finished after 34 minutes). Each voter's slice is the next 20 voters around a ring at
 * 67 %; the relay node's slice is up to 1000 voters spread evenly over the ring, at 67 %, so its
 * node accepts and confirms. Before the blocks, every voter whose statements are ingested has its
 * slice stored (a slice is stored once in a voter's life), so the rounds compare votes with votes at
 * every size; what a first-seen slice costs is its own rows, measured first (decision 0770).
 * `npm run bench` calls `runRelayIngestBench()`; alone:
 * `npx tsx perf/relay-ingest.bench.ts [voters...] [--statements N] [--block N]`.
 */
export type { BenchRow };

export interface RelayIngestBenchOptions {
  /** One relay per entry, with this many registered voters; default [100, 1000, 10000]. */
  voters?: number[];
  /** Validators in each voter's slice; default 20. */
  sliceSize?: number;
  /** Clients posting at once in the concurrent rounds; default 4. */
  concurrency?: number;
  /** Statements each relay ingests per mode; default 6 blocks (whole items, or a sample of voters: see above). */
  statements?: number;
  /** Requests of each round of a block; default 400. */
  blockSize?: number;
  /** Voters whose first vote after a restart is measured against their next one; default 100. */
  coldPairs?: number;
  /** Monotonic milliseconds; injectable like every clock in hilbench. */
  nowMs?: () => number;
}

/** Runs every measurement and returns the rows; `npm run bench` (perf/run-all.ts) prints them with the others. */
export async function runRelayIngestBench(options: RelayIngestBenchOptions = {}): Promise<BenchRow[]> {
  const voterCounts = [...(options.voters ?? [100, 1000, 10000])].sort((a, b) => a - b);
  const concurrency = options.concurrency ?? 4;
  const blockSize = options.blockSize ?? 400;
  const statements = options.statements ?? 6 * blockSize;
  const sceneOptions = { sliceSize: options.sliceSize ?? 20, statements, blockSize, concurrency, nowMs: options.nowMs ?? hostNowMs };
  const client = fork(fileURLToPath(new URL('./relay-load-client.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  const scenes: IngestScene[] = [];
  try {
    for (const voters of voterCounts) scenes.push(await IngestScene.open(client, { ...sceneOptions, voters }));
    const blocks = Math.min(...scenes.map((s) => s.blocks));
    const results: BlockResult[][] = scenes.map(() => []);
    for (let k = 0; k < blocks; k++) for (const [j, scene] of scenes.entries()) results[j]?.push(await scene.block(k));
    const rows: BenchRow[] = [];
    for (const [j, scene] of scenes.entries()) {
      const cold = await scene.coldAndWarm(options.coldPairs ?? 100);
      rows.push(...sceneRows(scene.options.voters, scene.votersIngesting, results[j] ?? [], cold, concurrency), ...firstSeenRows(scene));
    }
    rows.push(...flatRows(voterCounts, results, concurrency));
    return rows;
  } finally {
    for (const scene of scenes) await scene.close();
    client.kill();
  }
}

const median = (values: readonly number[]): number => percentile(values, 50);
/** The median over blocks of `of(block)`. */
const over = (blocks: readonly BlockResult[], of: (b: BlockResult) => number): number => median(blocks.map(of));
/** 1 / (1 / a + 1 / b): the rate of doing both, one after the other. */
const inSeries = (a: number, b: number): number => 1 / (1 / a + 1 / b);

function sceneRows(voters: number, ingesting: number, blocks: readonly BlockResult[], cold: { cold: number[]; warm: number[] }, concurrency: number): BenchRow[] {
  const n = `${voters} voters`;
  const c = `${concurrency} clients`;
  const ratioNote = (goal: string) => `${goal}; median of ${blocks.length} block ratios`;
  const latencies = blocks.flatMap((b) => b.latencies);
  const coldRatios = cold.cold.map((ms, k) => ms / (cold.warm[k] as number));
  return [
    { name: `POST /me, ${n}, sequential`, value: over(blocks, (b) => b.writeSequential), unit: 'requests/s', note: 'an authenticated write committed durably; median over blocks' },
    { name: `one vote's signature check, ${n}`, value: 1000 / over(blocks, (b) => b.verify), unit: 'ms', note: "verifyVote (canonical JSON, Ed25519 by OpenSSL) in the relay's process, over the block's statements" },
    {
      name: `vote ingest, ${n}, sequential`,
      value: over(blocks, (b) => b.sequential),
      unit: 'votes/s',
      note: ingesting < voters ? `median over blocks; the vote and accept of ${ingesting} voters sampled evenly over all ${voters}` : 'median over blocks; whole items',
    },
    { name: `vote ingest, ${n}, sequential, p50`, value: percentile(latencies, 50), unit: 'ms', note: 'one POST /items/{id}/vote' },
    { name: `vote ingest, ${n}, sequential, p99`, value: percentile(latencies, 99), unit: 'ms', note: '' },
    { name: `GET /me, ${n}, ${c}`, value: over(blocks, (b) => b.meConcurrent), unit: 'requests/s', note: '' },
    { name: `POST /me, ${n}, ${c}`, value: over(blocks, (b) => b.writeConcurrent), unit: 'requests/s', note: '' },
    { name: `vote ingest, ${n}, ${c}`, value: over(blocks, (b) => b.concurrent), unit: 'votes/s', note: '' },
    { name: `event loop per vote, ${n}, ${c}`, value: over(blocks, (b) => b.loopMsPerVote), unit: 'ms', note: "CPU time of the relay's main thread per vote (signature checks run on the thread pool, decision 0620)" },
    { name: `event loop per GET /me, ${n}, ${c}`, value: over(blocks, (b) => b.loopMsPerGetMe), unit: 'ms', note: '' },
    { name: `event loop per POST /me, ${n}, ${c}`, value: over(blocks, (b) => b.loopMsPerPostMe), unit: 'ms', note: '' },
    { name: `fdatasyncs per accepted vote, ${n}, ${c}`, value: over(blocks, (b) => b.syncsPerVoteConcurrent), unit: 'count', note: 'goal: at most 0.5; counted, not timed' },
    { name: `write transactions per accepted vote, ${n}, ${c}`, value: over(blocks, (b) => b.commitsPerVoteConcurrent), unit: 'count', note: 'goal: at most 0.5; counted, not timed' },
    { name: `fdatasyncs per accepted vote, ${n}, sequential`, value: over(blocks, (b) => b.syncsPerVoteSequential), unit: 'count', note: 'one client waits for each' },
    { name: `write transactions per accepted vote, ${n}, sequential`, value: over(blocks, (b) => b.commitsPerVoteSequential), unit: 'count', note: '' },
    { name: `first vote after a restart, ${n}, p50`, value: median(cold.cold), unit: 'ms', note: `${cold.cold.length} voters, each a key the restarted process has not seen` },
    { name: `next vote of the same voter, ${n}, p50`, value: median(cold.warm), unit: 'ms', note: 'its accept, sent right after' },
    {
      name: `ingest / (POST /me + signature check), ${n}, sequential`,
      value: over(blocks, (b) => b.sequential / inSeries(b.writeSequential, b.verify)),
      unit: 'ratio',
      note: ratioNote('goal: at least 0.8'),
    },
    { name: `ingest / POST /me, ${n}, ${c}`, value: over(blocks, (b) => b.concurrent / b.writeConcurrent), unit: 'ratio', note: ratioNote('goal: at least 0.65') },
    { name: `ingest / GET /me, ${n}, ${c}`, value: over(blocks, (b) => b.concurrent / b.meConcurrent), unit: 'ratio', note: ratioNote('goal: at least 0.5') },
    { name: `ingest by ${c} / sequential ingest, ${n}`, value: over(blocks, (b) => b.concurrent / b.sequential), unit: 'ratio', note: ratioNote('goal: at least 1.5') },
    {
      name: `event loop per vote / per GET /me, ${n}, ${c}`,
      value: over(blocks, (b) => b.loopMsPerVote / b.loopMsPerGetMe),
      unit: 'ratio',
      note: ratioNote('goal: at most 1.25 (half of 2.5, where it stood before issue 30)'),
    },
    { name: `first vote after a restart / next vote, ${n}`, value: median(coldRatios), unit: 'ratio', note: 'goal: at most 2; median of the pairs' },
  ];
}

/** A vote carrying a slice the relay stores for the first time against one whose slice is stored (`IngestScene.firstSeenBlocks`). */
function firstSeenRows(scene: IngestScene): BenchRow[] {
  const n = `${scene.options.voters} voters`;
  const blocks = scene.firstSeenBlocks;
  const note = `sequential, ${blocks.length} blocks of votes alternately (ABAB), measured before the warm-up stores every voter's slice`;
  return [
    { name: `vote with a first-seen slice, ${n}, p50`, value: median(blocks.map((b) => b.firstSeenMs)), unit: 'ms', note: 'the relay stores the slice (a voter does this once in its life)' },
    { name: `vote with a stored slice, ${n}, p50`, value: median(blocks.map((b) => b.storedMs)), unit: 'ms', note: 'the same voters, another item' },
    { name: `first-seen slice / stored slice, ${n}`, value: median(blocks.map((b) => b.firstSeenMs / b.storedMs)), unit: 'ratio', note: `median of the block ratios; ${note}` },
  ];
}

/** Flat: each larger relay's blocks against the smallest relay's blocks measured beside them. */
function flatRows(voterCounts: readonly number[], results: readonly BlockResult[][], concurrency: number): BenchRow[] {
  const smallest = results[0] ?? [];
  return voterCounts.slice(1).flatMap((voters, j) => {
    const larger = results[j + 1] ?? [];
    const ratios = (of: (b: BlockResult) => number) => median(larger.map((b, k) => of(b) / of(smallest[k] as BlockResult)));
    const note = `goal (flat): at least 0.9; median of ${larger.length} block ratios`;
    return [
      { name: `ingest at ${voters} / at ${voterCounts[0]} voters, sequential`, value: ratios((b) => b.sequential), unit: 'ratio', note },
      { name: `ingest at ${voters} / at ${voterCounts[0]} voters, ${concurrency} clients`, value: ratios((b) => b.concurrent), unit: 'ratio', note },
    ];
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  const flag = (name: string) => {
    const at = args.indexOf(name);
    return at >= 0 ? Number(args.splice(at, 2)[1]) : undefined;
  };
  const statements = flag('--statements');
  const blockSize = flag('--block');
  const voters = args.map(Number).filter((n) => n > 0);
  console.log(markdownTable(await runRelayIngestBench({ ...(voters.length > 0 ? { voters } : {}), ...(statements ? { statements } : {}), ...(blockSize ? { blockSize } : {}) })));
}
