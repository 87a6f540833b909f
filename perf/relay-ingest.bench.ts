import { type ChildProcess, fork } from 'node:child_process';
import { closeSync, fdatasyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { systemClock } from '../core/clock.js';
import { type BenchRow, markdownTable, nowMs as hostNowMs, percentile } from './measure.js';
import { defaultThreshold, generateNodeKey, type NodeKey, type QuorumSet, type Vote, verifyVote } from '../core/relay/index.js';
import { call, postClaim, registerNode, startRelayServer, tempDataDir, voteBy, type RunningRelay, type TestNode } from '../test/support/relay-test-kit.js';
import type { LoadResult, LoadRound } from './relay-load-client.js';

/**
 * Relay ingest speed through HTTP (issue 18): signed votes accepted per second by
 * `POST /items/{id}/vote` (parse, signature check, store, the relay node's tally and its own
 * statements), against the floor of an authenticated request that does no work (`GET /me` on the
 * same relay), sequentially and by 4 clients, at 100, 1000 and 10 000 voters; and against `POST /me`, an
 * authenticated write committed durably (decision 0496: no goal, data for the owner). Absolute rates on a
 * shared machine are noise; the rows that matter are the ratios measured in the same run.
 *
 * The client is a child process (perf/relay-load-client.ts, keep-alive HTTP, one connection per
 * client), so it never shares the relay's event loop. Statements are signed before a round
 * starts: a vote, then an accept, per voter, in that order (every vote first, as a real network
 * sends them). Each voter's slice is the next 20 voters around a ring at 67 %; the relay node's
 * slice is up to 1000 voters (a quorum set names at most 1000 nodes) spread evenly over the ring,
 * at 67 %, so its node accepts and confirms: the costliest tally is measured. `npm run bench` calls
 * `runRelayIngestBench()`; run this file alone with `npx tsx perf/relay-ingest.bench.ts [voters...]`.
 */
export type { BenchRow };

export interface RelayIngestBenchOptions {
  /** One fresh relay per entry, with this many registered voters; default [100, 1000, 10000]. */
  voters?: number[];
  /** Validators in each voter's slice (the next ones around the ring, 67 % threshold); default 20. */
  sliceSize?: number;
  /** Clients posting at once in the concurrent rounds; default 4. */
  concurrency?: number;
  /** `GET /me` requests per floor round; default 2000. */
  floorRequests?: number;
  /** Statements per ingest round at least (a small network votes on several items); default 2000. */
  minStatementsPerRound?: number;
  /** Monotonic milliseconds; injectable like every clock in hilbench. */
  nowMs?: () => number;
}

/** Statements per measured ingest round at least, by default (several items when the network is small). */
const MIN_STATEMENTS_PER_ROUND = 2000;

interface Scene {
  voters: number;
  sequential: number;
  concurrent: number;
  meSequential: number;
  meConcurrent: number;
  /** `POST /me` (an authenticated write committed durably), the second floor of decision 0496. */
  writeSequential: number;
  writeConcurrent: number;
  /** One vote's signature check (`verifyVote`), ms, measured beside the floor. */
  verifyMs: number;
  /** One WAL-sized write and fdatasync in the relay's data dir, ms, measured beside the floor. */
  syncMs: number;
}

/** Runs every measurement and returns the rows; `npm run bench` (perf/run-all.ts) prints them with the others. */
export async function runRelayIngestBench(options: RelayIngestBenchOptions = {}): Promise<BenchRow[]> {
  const client = fork(fileURLToPath(new URL('./relay-load-client.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  try {
    const rows: BenchRow[] = [];
    const scenes: Scene[] = [];
    for (const voters of options.voters ?? [100, 1000, 10000]) {
      const measured = await measureScene(client, voters, options);
      rows.push(...measured.rows);
      scenes.push(measured.scene);
    }
    rows.push(...ratioRows(scenes, options.concurrency ?? 4));
    return rows;
  } finally {
    client.kill();
  }
}

async function measureScene(client: ChildProcess, voterCount: number, options: RelayIngestBenchOptions): Promise<{ rows: BenchRow[]; scene: Scene }> {
  if (!Number.isSafeInteger(voterCount) || voterCount < 2) throw new RangeError(`relay ingest bench needs at least 2 voters, got ${voterCount}`);
  const nowMs = options.nowMs ?? hostNowMs;
  const sliceSize = Math.min(options.sliceSize ?? 20, voterCount - 1);
  const concurrency = options.concurrency ?? 4;
  const floorRequests = options.floorRequests ?? 2000;
  const data = tempDataDir('relay-ingest-bench-');
  const keys = Array.from({ length: voterCount }, () => generateNodeKey());
  const ring = keys.map((k) => k.nodeId);
  const stride = Math.max(1, Math.ceil(voterCount / 1000));
  const relayMembers = ring.filter((_, k) => k % stride === 0).sort();
  const selfSlice: QuorumSet = { t: defaultThreshold(relayMembers.length), v: relayMembers, i: [] };
  // The relay runs on host time: registrations and votes carry real created_at values.
  const relay = await startRelayServer({ clock: systemClock, dataDir: data.dir, selfSlice, logger: { info: () => {}, warn: () => {}, error: (m, c) => console.error(m, c) } });
  try {
    const voters = await registerVoters(relay, keys);
    const sliceOf = (k: number): QuorumSet => {
      const v = Array.from({ length: sliceSize }, (_, j) => ring[(k + 1 + j) % voterCount] as string);
      return { t: defaultThreshold(sliceSize), v, i: [] };
    };
    const setup = `${voterCount} voters, slices of ${sliceSize} (67 %), a vote and an accept per voter`;
    const me = Array.from({ length: floorRequests }, (_, k) => ({ method: 'GET' as const, path: '/me', auth: (voters[k % voterCount] as TestNode).auth }));
    // Each write changes the row (SQLite writes a page either way; a changed text keeps it honest).
    const meWrites = (round: string) =>
      Array.from({ length: floorRequests }, (_, k) => ({ method: 'POST' as const, path: '/me', auth: (voters[k % voterCount] as TestNode).auth, body: JSON.stringify({ about: `ingest bench, ${round} write ${k}` }) }));
    const round = async (requests: LoadRound['requests'], clients: number, expectStatus: number) => {
      const result = await runRound(client, { baseUrl: relay.baseUrl, requests, clients, expectStatus });
      return { perSecond: (requests.length * 1000) / result.elapsedMs, latencies: result.latenciesMs };
    };
    // A small network's round is short: enough items that every round has at least 2000 statements.
    const itemsPerRound = Math.max(1, Math.ceil((options.minStatementsPerRound ?? MIN_STATEMENTS_PER_ROUND) / (2 * voterCount)));
    const votesFor = async (title: string, items = itemsPerRound) => {
      const requests: LoadRound['requests'] = [];
      for (let k = 0; k < items; k++) {
        const item = await postClaim(relay, voters[0] as TestNode, { kind: 'statement', title: `${title} #${k}`, body: '' });
        requests.push(...signAll(voters, item, sliceOf).map((vote) => ({ method: 'POST' as const, path: `/items/${vote.item}/vote`, body: JSON.stringify(vote) })));
      }
      return requests;
    };

    // Warm-up (JIT, caches, connections) on an item of its own, then each ingest round beside its
    // floor round, so both see the same machine.
    await round(me.slice(0, 200), 1, 200);
    await round(meWrites('warm-up').slice(0, 200), 1, 200);
    await round((await votesFor(`ingest bench, warm-up, ${voterCount} voters`, 1)).slice(0, 400), 1, 201);
    const sequentialVotes = await votesFor(`ingest bench, sequential, ${voterCount} voters`);
    const meSequential = await round(me, 1, 200);
    const writeSequential = await round(meWrites('sequential'), 1, 200);
    const verifyMs = verifyCostMs(sequentialVotes, nowMs);
    const syncMs = syncCostMs(data.dir, nowMs);
    const sequential = await round(sequentialVotes, 1, 201);
    const last = await bulletinRead(relay, sequentialVotes.slice(-2 * voterCount), nowMs);
    const concurrentVotes = await votesFor(`ingest bench, concurrent, ${voterCount} voters`);
    const meConcurrent = await round(me, concurrency, 200);
    const writeConcurrent = await round(meWrites('concurrent'), concurrency, 200);
    const concurrent = await round(concurrentVotes, concurrency, 201);
    const rows: BenchRow[] = [
      { name: `GET /me, ${voterCount} voters, sequential`, value: meSequential.perSecond, unit: 'requests/s', note: `the floor: an authenticated request that does no work, ${floorRequests} requests` },
      { name: `POST /me, ${voterCount} voters, sequential`, value: writeSequential.perSecond, unit: 'requests/s', note: `an authenticated write committed durably (decision 0496), ${floorRequests} requests` },
      { name: `vote ingest, ${voterCount} voters, sequential`, value: sequential.perSecond, unit: 'votes/s', note: `${sequentialVotes.length} statements (${itemsPerRound} item${itemsPerRound > 1 ? 's' : ''}); ${setup}` },
      { name: `vote ingest, ${voterCount} voters, sequential, p50`, value: percentile(sequential.latencies, 50), unit: 'ms', note: 'one POST /items/{id}/vote' },
      { name: `vote ingest, ${voterCount} voters, sequential, p99`, value: percentile(sequential.latencies, 99), unit: 'ms', note: '' },
      { name: `one vote's signature check, ${voterCount} voters`, value: verifyMs, unit: 'ms', note: 'verifyVote (canonical JSON, Ed25519 by OpenSSL), mean over the round\'s statements' },
      { name: `one WAL sync, ${voterCount} voters`, value: syncMs, unit: 'ms', note: 'write 8 pages + fdatasync in the relay\'s data dir, mean of 200' },
      { name: `GET /me, ${voterCount} voters, ${concurrency} clients`, value: meConcurrent.perSecond, unit: 'requests/s', note: '' },
      { name: `POST /me, ${voterCount} voters, ${concurrency} clients`, value: writeConcurrent.perSecond, unit: 'requests/s', note: '' },
      { name: `vote ingest, ${voterCount} voters, ${concurrency} clients`, value: concurrent.perSecond, unit: 'votes/s', note: `${concurrentVotes.length} statements` },
      last,
    ];
    const scene = { voters: voterCount, sequential: sequential.perSecond, concurrent: concurrent.perSecond, meSequential: meSequential.perSecond, meConcurrent: meConcurrent.perSecond, writeSequential: writeSequential.perSecond, writeConcurrent: writeConcurrent.perSecond, verifyMs, syncMs };
    return { rows, scene };
  } finally {
    await relay.close();
    data.remove();
  }
}

/** Issue 18's goals as ratios of rates measured in the same run. */
function ratioRows(scenes: readonly Scene[], concurrency: number): BenchRow[] {
  const rows: BenchRow[] = [];
  for (const s of scenes) {
    rows.push(
      { name: `ingest / GET /me, ${s.voters} voters, sequential`, value: s.sequential / s.meSequential, unit: 'ratio', note: 'goal: at least 0.6' },
      {
        name: `ingest / GET /me, ${s.voters} voters, sequential, at most`,
        value: sequentialBound(s),
        unit: 'ratio',
        note: 'if a vote cost the floor plus one signature check and one WAL sync, and nothing else',
      },
      { name: `ingest / GET /me, ${s.voters} voters, ${concurrency} clients`, value: s.concurrent / s.meConcurrent, unit: 'ratio', note: 'goal: at least 0.5' },
      { name: `ingest / POST /me, ${s.voters} voters, sequential`, value: s.sequential / s.writeSequential, unit: 'ratio', note: 'no goal: against an authenticated durable write (decision 0496)' },
      { name: `ingest / POST /me, ${s.voters} voters, ${concurrency} clients`, value: s.concurrent / s.writeConcurrent, unit: 'ratio', note: 'no goal: against an authenticated durable write (decision 0496)' },
      { name: `ingest by ${concurrency} clients / sequential ingest, ${s.voters} voters`, value: s.concurrent / s.sequential, unit: 'ratio', note: 'goal: at least 1.3' },
    );
  }
  const smallest = scenes[0];
  for (const s of scenes.slice(1)) {
    if (!smallest) break;
    rows.push(
      { name: `ingest at ${s.voters} / at ${smallest.voters} voters, sequential`, value: s.sequential / smallest.sequential, unit: 'ratio', note: 'goal (flat): at least 0.8' },
      { name: `ingest at ${s.voters} / at ${smallest.voters} voters, ${concurrency} clients`, value: s.concurrent / smallest.concurrent, unit: 'ratio', note: 'goal (flat): at least 0.8' },
    );
  }
  return rows;
}

/** The sequential ratio a vote could reach if beyond the floor it only checked its signature and waited for one sync. */
function sequentialBound(s: Scene): number {
  const floorMs = 1000 / s.meSequential;
  return floorMs / (floorMs + s.verifyMs + s.syncMs);
}

/** Mean ms of `verifyVote` over the round's statements (keys already cached by the warm-up, as in the relay). */
function verifyCostMs(votes: readonly { body?: string }[], nowMs: () => number): number {
  const parsed = votes.map((v) => JSON.parse(v.body ?? 'null') as Vote);
  const t0 = nowMs();
  for (const vote of parsed) if (!verifyVote(vote)) throw new Error('relay ingest bench: a signed statement does not verify');
  return (nowMs() - t0) / parsed.length;
}

/** Mean ms of writing 8 pages (a vote's WAL frames) and fdatasync, in `dir` (the relay's file system). */
function syncCostMs(dir: string, nowMs: () => number, times = 200): number {
  const path = join(dir, 'sync-probe');
  const fd = openSync(path, 'w');
  const page = Buffer.alloc(8 * 4096, 1);
  try {
    const t0 = nowMs();
    for (let k = 0; k < times; k++) {
      writeSync(fd, page, 0, page.length, (k % 32) * page.length);
      fdatasyncSync(fd);
    }
    return (nowMs() - t0) / times;
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
}

function runRound(client: ChildProcess, round: LoadRound): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`relay load client exited (code ${code}) during a round`));
    client.once('exit', onExit);
    client.once('message', (result: LoadResult) => {
      client.off('exit', onExit);
      if (result.error) reject(new Error(`relay ingest bench: ${result.error}`));
      else resolve(result);
    });
    client.send(round);
  });
}

/** Registers the voters' keys, a few at a time (registration is setup, not measured). */
async function registerVoters(relay: RunningRelay, keys: readonly NodeKey[]): Promise<TestNode[]> {
  const voters: TestNode[] = [];
  for (let start = 0; start < keys.length; start += 16) {
    const batch = keys.slice(start, start + 16);
    voters.push(...(await Promise.all(batch.map((key, k) => registerNode(relay, systemClock, { name: `voter ${start + k}`, key })))));
  }
  return voters;
}

/** Every voter's `vote`, then every voter's `accept`, all yes, signed now. */
function signAll(voters: readonly TestNode[], item: string, sliceOf: (k: number) => QuorumSet): Vote[] {
  const slices = voters.map((_, k) => sliceOf(k));
  return (['vote', 'accept'] as const).flatMap((phase) => voters.map((voter, k) => voteBy(voter, item, 'yes', phase, slices[k] as QuorumSet, systemClock)));
}

/** Latency of one GET of the relay node's bulletin once every statement is in (served from the kept tally). */
async function bulletinRead(relay: RunningRelay, votes: readonly { path: string }[], nowMs: () => number): Promise<BenchRow> {
  const item = (votes[0] as { path: string }).path.split('/')[2] as string;
  const path = `/items/${item}/bulletin/${relay.service.nodeId}`;
  const samples: number[] = [];
  let state = '';
  for (let k = 0; k < 20; k++) {
    const t0 = nowMs();
    const answer = await call(relay.baseUrl, 'GET', path);
    samples.push(nowMs() - t0);
    if (answer.status !== 200) throw new Error(`relay ingest bench: GET ${path} answered ${answer.status}: ${answer.text.slice(0, 300)}`);
    state = String(answer.body.state);
  }
  return { name: `relay node's bulletin after ${votes.length} statements, p50`, value: percentile(samples, 50), unit: 'ms', note: `GET /items/{id}/bulletin/{relay node}, 20 reads; state ${state}` };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const voters = process.argv.slice(2).map(Number).filter((n) => n > 0);
  console.log(markdownTable(await runRelayIngestBench(voters.length > 0 ? { voters } : {})));
}
