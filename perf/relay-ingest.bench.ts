import { pathToFileURL } from 'node:url';
import { systemClock } from '../core/clock.js';
import { type BenchRow, markdownTable, nowMs as hostNowMs, percentile } from './measure.js';
import { defaultThreshold, generateNodeKey, type NodeKey, type QuorumSet, type Vote } from '../core/relay/index.js';
import { call, postClaim, registerNode, startRelayServer, tempDataDir, voteBy, type RunningRelay, type TestNode } from '../test/support/relay-test-kit.js';

/**
 * Relay ingest speed through HTTP (issue 5): signed votes accepted per second by
 * `POST /items/{id}/vote` (parse, signature check, store, the relay node's re-tally and its own
 * statements, all in one transaction), sequentially and from a few concurrent clients, and the
 * latency of a bulletin read (a full tally) once 100 and 1000 votes are stored. A relay on
 * loopback (port 0) in a temporary data dir; votes are signed before the clock starts, so only the
 * relay's work is timed. `npm run bench` calls `runRelayIngestBench()`; run this file alone with
 * `npx tsx perf/relay-ingest.bench.ts`. Tally cost without HTTP: perf/relay-core.bench.ts.
 */
export type { BenchRow };

export interface RelayIngestBenchOptions {
  /** One fresh relay per entry, with this many registered voters; default [100, 1000]. */
  voters?: number[];
  /** Validators in each voter's slice (the next ones in registration order, 67 % threshold); default 20. */
  sliceSize?: number;
  /** Clients posting at once in the concurrent run; default 4. */
  concurrency?: number;
  /** Stored votes after which bulletin reads are timed (in each run that reaches them, and after the last); default [100, 1000]. */
  bulletinAfterVotes?: number[];
  /** Bulletin reads timed at each of those points; default 50. */
  bulletinReads?: number;
  /** Monotonic milliseconds; injectable like every clock in hilbench. */
  nowMs?: () => number;
}

/** Runs every measurement and returns the rows; `npm run bench` (perf/run-all.ts) prints them with the others. */
export async function runRelayIngestBench(options: RelayIngestBenchOptions = {}): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const voters of options.voters ?? [100, 1000]) rows.push(...(await measureScene(voters, options)));
  return rows;
}

async function measureScene(voterCount: number, options: RelayIngestBenchOptions): Promise<BenchRow[]> {
  if (!Number.isSafeInteger(voterCount) || voterCount < 2) throw new RangeError(`relay ingest bench needs at least 2 voters, got ${voterCount}`);
  const nowMs = options.nowMs ?? hostNowMs;
  const sliceSize = Math.min(options.sliceSize ?? 20, voterCount - 1);
  const concurrency = options.concurrency ?? 4;
  const checkpoints = new Set(options.bulletinAfterVotes ?? [100, 1000]);
  const reads = options.bulletinReads ?? 50;
  const data = tempDataDir('relay-ingest-bench-');
  // The relay's own slice is every voter at 67 %, configured (registrations never join it by
  // themselves, decision 0402), so its node accepts and confirms: the costliest tally is measured.
  const keys = Array.from({ length: voterCount }, () => generateNodeKey());
  const selfSlice: QuorumSet = { t: defaultThreshold(voterCount), v: keys.map((k) => k.nodeId).sort(), i: [] };
  // The relay runs on host time: registrations and votes carry real created_at values.
  const relay = await startRelayServer({ clock: systemClock, dataDir: data.dir, selfSlice, logger: { info: () => {}, warn: () => {}, error: (m, c) => console.error(m, c) } });
  try {
    const voters = await registerVoters(relay, keys);
    const sliceOf = (k: number): QuorumSet => {
      const v = Array.from({ length: sliceSize }, (_, j) => voters[(k + 1 + j) % voterCount]!.nodeId);
      return { t: defaultThreshold(sliceSize), v, i: [] };
    };
    const rows: BenchRow[] = [];
    const setup = `${voterCount} voters, slices of ${sliceSize} (67 %), a vote and an accept per voter`;

    // Sequential: one client, statements in the order a real network sends them (every vote, then every accept).
    const sequentialItem = await postClaim(relay, voters[0]!.auth, { kind: 'statement', title: `ingest bench, sequential, ${voterCount} voters`, body: '' });
    const sequential = signAll(voters, sequentialItem, sliceOf);
    const latencies: number[] = [];
    const readRows: BenchRow[] = [];
    const t0 = nowMs();
    let pausedMs = 0;
    for (const [index, vote] of sequential.entries()) {
      const sent = nowMs();
      await postVote(relay, vote);
      latencies.push(nowMs() - sent);
      // Also once every statement is in: the relay's node has then accepted and confirmed, the costliest tally.
      if (checkpoints.has(index + 1) || index + 1 === sequential.length) {
        const pause = nowMs();
        readRows.push(...(await bulletinReads(relay, sequentialItem, index + 1, voterCount, reads, nowMs)));
        pausedMs += nowMs() - pause;
      }
    }
    const sequentialMs = nowMs() - t0 - pausedMs;
    rows.push(
      { name: `vote ingest, ${voterCount} voters, sequential`, value: (sequential.length * 1000) / sequentialMs, unit: 'votes/s', note: `${sequential.length} statements; ${setup}` },
      { name: `vote ingest, ${voterCount} voters, sequential, p50`, value: percentile(latencies, 50), unit: 'ms', note: 'one POST /items/{id}/vote' },
      { name: `vote ingest, ${voterCount} voters, sequential, p99`, value: percentile(latencies, 99), unit: 'ms', note: '' },
    );

    // Concurrent: the same statements for a second item, split between `concurrency` clients.
    const concurrentItem = await postClaim(relay, voters[0]!.auth, { kind: 'statement', title: `ingest bench, concurrent, ${voterCount} voters`, body: '' });
    const concurrent = signAll(voters, concurrentItem, sliceOf);
    let next = 0;
    const t1 = nowMs();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let k = next++; k < concurrent.length; k = next++) await postVote(relay, concurrent[k]!);
      }),
    );
    rows.push({ name: `vote ingest, ${voterCount} voters, ${concurrency} concurrent clients`, value: (concurrent.length * 1000) / (nowMs() - t1), unit: 'votes/s', note: `${concurrent.length} statements` });
    return [...rows, ...readRows];
  } finally {
    await relay.close();
    data.remove();
  }
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
  return (['vote', 'accept'] as const).flatMap((phase) => voters.map((voter, k) => voteBy(voter, item, 'yes', phase, slices[k]!, systemClock)));
}

async function postVote(relay: RunningRelay, vote: Vote): Promise<void> {
  const answer = await call(relay.baseUrl, 'POST', `/items/${vote.item}/vote`, { body: vote });
  if (answer.status !== 201) throw new Error(`relay ingest bench: vote by ${vote.voter.slice(0, 8)}… (${vote.phase}) answered ${answer.status}: ${answer.text.slice(0, 300)}`);
}

/** p50 and p99 of GET /items/{id}/bulletin/{relay node} (a full tally as the relay's node) with `stored` votes. */
async function bulletinReads(relay: RunningRelay, item: string, stored: number, voterCount: number, reads: number, nowMs: () => number): Promise<BenchRow[]> {
  const path = `/items/${item}/bulletin/${relay.service.nodeId}`;
  const samples: number[] = [];
  let state = '';
  for (let k = 0; k < reads; k++) {
    const t0 = nowMs();
    const answer = await call(relay.baseUrl, 'GET', path);
    samples.push(nowMs() - t0);
    if (answer.status !== 200) throw new Error(`relay ingest bench: GET ${path} answered ${answer.status}: ${answer.text.slice(0, 300)}`);
    state = String(answer.body.state);
  }
  return [
    { name: `bulletin read after ${stored} votes, ${voterCount} voters, p50`, value: percentile(samples, 50), unit: 'ms', note: `GET /items/{id}/bulletin/{relay node}, ${reads} reads; state ${state}` },
    { name: `bulletin read after ${stored} votes, ${voterCount} voters, p99`, value: percentile(samples, 99), unit: 'ms', note: '' },
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(markdownTable(await runRelayIngestBench()));
}
