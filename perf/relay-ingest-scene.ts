import type { ChildProcess } from 'node:child_process';
import { fdatasync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { systemClock } from '../core/clock.js';
import { defaultThreshold, type QuorumSet } from '../core/relay/quorum-set.js';
import { forgetKeyCaches } from '../core/relay/ed25519.js';
import { generateNodeKey, type NodeKey } from '../core/relay/node-id.js';
import { type Vote, verifyVote } from '../core/relay/vote.js';
import type { SyncFile } from '../server/storage/wal-sync.js';
import { postClaim, registerNode, startRelayServer, tempDataDir, voteBy, type RunningRelay, type TestNode } from '../test/support/relay-test-kit.js';
import type { LoadMessage, LoadResult, LoadRound } from './relay-load-client.js';
import { percentile } from './measure.js';

/**
 * One relay of the ingest bench (perf/relay-ingest.bench.ts) with its registered voters and the
 * signed statements of its rounds, and the rounds it measures: a block is a floor round beside an
 * ingest round of the same length, so that blocks measured one after another alternate them (ABAB).
 */
export interface SceneOptions {
  voters: number;
  /** Validators in each voter's slice (the next ones around the ring, 67 %). */
  sliceSize: number;
  /**
   * Statements ingested in each mode (sequential, concurrent): whole items of a vote and an accept
   * per voter, or, when one item holds more, the votes and accepts of voters sampled evenly over the
   * population (`chosenVoters`).
   */
  statements: number;
  /** Requests of one block's rounds. */
  blockSize: number;
  concurrency: number;
  nowMs: () => number;
  /** False: lone votes are checked first, on the loop, not ahead on the signature thread (decision 1090's side-by-side runs). Default true. */
  checkAhead?: boolean;
}

/** What one block measured: rates per second, event-loop and counted work per request. */
export interface BlockResult {
  writeSequential: number;
  /** `verifyVote` over the block's sequential statements in the relay's process, per second. */
  verify: number;
  sequential: number;
  writeConcurrent: number;
  meConcurrent: number;
  concurrent: number;
  /** CPU ms of the relay's event loop (its main thread) per request, in the rounds by several clients. */
  loopMsPerVote: number;
  loopMsPerGetMe: number;
  loopMsPerPostMe: number;
  /** WAL fdatasyncs and write transactions per accepted vote, by several clients and by one. */
  syncsPerVoteConcurrent: number;
  commitsPerVoteConcurrent: number;
  syncsPerVoteSequential: number;
  commitsPerVoteSequential: number;
  /** Latencies of the sequential ingest round, ms. */
  latencies: number[];
}

interface Round {
  perSecond: number;
  latencies: number[];
  loopMsPerRequest: number;
  syncs: number;
  commits: number;
}

export type LoadRequest = LoadRound['requests'][number];

/** Blocks, and votes per block, of the first-seen-slice rounds (`firstSeenBlocks`). */
const FIRST_SEEN_BLOCKS = 4;
const FIRST_SEEN_BLOCK_VOTES = 20;

export class IngestScene {
  readonly blocks: number;
  /**
   * Sequential votes carrying a slice the relay has never stored against votes of the same voters
   * whose slices are stored, block by block (p50 ms of each), measured at open before the warm-up
   * stores every chosen voter's slice.
   */
  readonly firstSeenBlocks: { firstSeenMs: number; storedMs: number }[] = [];
  /** Voters whose statements the rounds ingest: all of them, or an even sample (`chosenVoters`). */
  readonly votersIngesting: number;
  private constructor(
    readonly options: SceneOptions,
    private relay: RunningRelay,
    private readonly data: { dir: string; remove(): void },
    private readonly counters: { syncs: number },
    private readonly voters: TestNode[],
    private readonly sliceOf: (k: number) => QuorumSet,
    private readonly selfSlice: QuorumSet,
    private readonly sequentialVotes: LoadRequest[],
    private readonly concurrentVotes: LoadRequest[],
    private readonly client: ChildProcess,
  ) {
    this.blocks = Math.ceil(sequentialVotes.length / options.blockSize);
    this.votersIngesting = chosenVoters(options.voters, options.statements).length;
  }

  /** Starts a relay with `voters` registered voters and signs the statements of both modes. */
  static async open(client: ChildProcess, options: SceneOptions): Promise<IngestScene> {
    const { voters: voterCount } = options;
    if (!Number.isSafeInteger(voterCount) || voterCount < 2) throw new RangeError(`relay ingest bench needs at least 2 voters, got ${voterCount}`);
    const sliceSize = Math.min(options.sliceSize, voterCount - 1);
    const data = tempDataDir('relay-ingest-bench-');
    const keys: NodeKey[] = Array.from({ length: voterCount }, () => generateNodeKey());
    const ring = keys.map((k) => k.nodeId);
    // The relay node's slice: up to 1000 voters (a quorum set names at most 1000) spread evenly
    // over the ring, 67 %, so its node accepts and confirms: the costliest tally is measured.
    const stride = Math.max(1, Math.ceil(voterCount / 1000));
    const relayMembers = ring.filter((_, k) => k % stride === 0).sort();
    const selfSlice: QuorumSet = { t: defaultThreshold(relayMembers.length), v: relayMembers, i: [] };
    const counters = { syncs: 0 };
    const relay = await startScenesRelay(data.dir, selfSlice, counters, options.checkAhead !== false);
    try {
      const voters = await registerVoters(relay, keys);
      const sliceOf = (k: number): QuorumSet => {
        const v = Array.from({ length: sliceSize }, (_, j) => ring[(k + 1 + j) % voterCount] as string);
        return { t: defaultThreshold(sliceSize), v, i: [] };
      };
      // Whole items (every voter's vote, then every accept) while a round's statements hold them;
      // past that (10 000 voters) one item per mode, voted on by a sample of voters spread evenly
      // over the whole population, so the rounds stay as long as the smaller relays' and the bench
      // bounded, while every key, row and index lookup is one of the full network's.
      const chosen = chosenVoters(voterCount, options.statements);
      const items = Math.max(1, Math.ceil(options.statements / (2 * chosen.length)));
      const post = async (title: string, count: number) => {
        const posted: string[] = [];
        for (let k = 0; k < count; k++) posted.push(await postClaim(relay, voters[0] as TestNode, { kind: 'statement', title: `${title} #${k}`, body: '' }));
        return posted;
      };
      // Every item first, then the signing: signing a large network's statements keeps the event
      // loop busy for seconds, and the relay (in this process) may then close an idle keep-alive
      // connection just as a claim is posted on it (ECONNRESET).
      const itemsOf = {
        sequential: await post(`ingest bench, sequential, ${voterCount} voters`, items),
        concurrent: await post(`ingest bench, concurrent, ${voterCount} voters`, items),
        warmUp: await post(`ingest bench, warm-up, ${voterCount} voters`, 1),
        writeWarmUp: await post(`ingest bench, write warm-up, ${voterCount} voters`, 1),
        firstSeen: await post(`ingest bench, first-seen slices, ${voterCount} voters`, 1),
        storedSlice: await post(`ingest bench, stored slices, ${voterCount} voters`, 1),
      };
      // Each voter's `vote` on the items: the first half of what `signAll` signs.
      const votesOn = (posted: string[], who: readonly number[]) => posted.flatMap((item) => signAll(voters, who, item, sliceOf).slice(0, who.length).map(voteRequest));
      const sign = (posted: string[], who: readonly number[] = chosen) => posted.flatMap((item) => signAll(voters, who, item, sliceOf).map(voteRequest));
      const scene = new IngestScene({ ...options, sliceSize }, relay, data, counters, voters, sliceOf, selfSlice, sign(itemsOf.sequential), sign(itemsOf.concurrent), client);
      // Warm-up (JIT, caches, connections).
      await scene.round(scene.me('GET').slice(0, 200), 1, 200);
      await scene.round(scene.me('POST', 'warm-up').slice(0, 200), 1, 200);
      // What a slice the relay has never stored costs, measured before any is stored (issue 30:
      // the owners' decision to show it as a row of its own). Blocks of voters in turn: their votes
      // on one item, each carrying a slice the relay sees first (A), then the same voters' votes on
      // another item, each slice stored by then (B): ABAB, sequential, the median of the ratios.
      const firstSeenVoters = chosen.slice(0, Math.min(chosen.length, FIRST_SEEN_BLOCKS * FIRST_SEEN_BLOCK_VOTES));
      // The vote's write path warmed first (its JIT, the signature checks' pool) by voters outside those blocks.
      const spare = chosen.slice(firstSeenVoters.length, firstSeenVoters.length + FIRST_SEEN_BLOCK_VOTES);
      if (spare.length > 0) await scene.round(votesOn(itemsOf.writeWarmUp, spare), 1, 201);
      for (let start = 0; start < firstSeenVoters.length; start += FIRST_SEEN_BLOCK_VOTES) {
        const who = firstSeenVoters.slice(start, start + FIRST_SEEN_BLOCK_VOTES);
        const firstSeen = await scene.round(votesOn(itemsOf.firstSeen, who), 1, 201);
        const stored = await scene.round(votesOn(itemsOf.storedSlice, who), 1, 201);
        scene.firstSeenBlocks.push({ firstSeenMs: percentile(firstSeen.latencies, 50), storedMs: percentile(stored.latencies, 50) });
      }
      // Then every chosen voter's slice is stored (4 clients, for speed), so that the measured
      // rounds compare votes with votes at every size: a slice is stored once in a voter's life.
      await scene.round(votesOn(itemsOf.warmUp, chosen), options.concurrency, 201);
      return scene;
    } catch (error) {
      await relay.close();
      data.remove();
      throw error;
    }
  }

  /** The statements of block `k` of the sequential rounds. */
  private sequentialStatements(k: number): LoadRequest[] {
    return this.sequentialVotes.slice(k * this.options.blockSize, (k + 1) * this.options.blockSize);
  }

  /** Block `k`: each floor round beside the ingest round it is a ratio to. */
  async block(k: number): Promise<BlockResult> {
    const { blockSize, concurrency, nowMs } = this.options;
    const sequentialVotes = this.sequentialStatements(k);
    const concurrentVotes = this.concurrentVotes.slice(k * blockSize, (k + 1) * blockSize);
    const writeSequential = await this.round(this.me('POST', `block ${k} sequential`), 1, 200);
    const verify = verifyRate(sequentialVotes, nowMs);
    const sequential = await this.round(sequentialVotes, 1, 201);
    const writeConcurrent = await this.round(this.me('POST', `block ${k} concurrent`), concurrency, 200);
    const meConcurrent = await this.round(this.me('GET'), concurrency, 200);
    const concurrent = await this.round(concurrentVotes, concurrency, 201);
    return {
      writeSequential: writeSequential.perSecond,
      verify,
      sequential: sequential.perSecond,
      writeConcurrent: writeConcurrent.perSecond,
      meConcurrent: meConcurrent.perSecond,
      concurrent: concurrent.perSecond,
      loopMsPerVote: concurrent.loopMsPerRequest,
      loopMsPerGetMe: meConcurrent.loopMsPerRequest,
      loopMsPerPostMe: writeConcurrent.loopMsPerRequest,
      syncsPerVoteConcurrent: concurrent.syncs / concurrentVotes.length,
      commitsPerVoteConcurrent: concurrent.commits / concurrentVotes.length,
      syncsPerVoteSequential: sequential.syncs / sequentialVotes.length,
      commitsPerVoteSequential: sequential.commits / sequentialVotes.length,
      latencies: sequential.latencies,
    };
  }

  /**
   * A voter's first vote after a restart against a warm one, in pairs: the relay restarts on its
   * data dir and the process forgets its parsed keys and key verdicts (what a new process starts
   * without); then each of `pairs` voters sends its vote (cold: its key is new to the process) and
   * at once its accept (warm). Returns the latencies of both, ms, pair by pair.
   */
  async coldAndWarm(pairs: number): Promise<{ cold: number[]; warm: number[] }> {
    await this.relay.close();
    forgetKeyCaches();
    this.relay = await startScenesRelay(this.data.dir, this.selfSlice, this.counters, this.options.checkAhead !== false);
    const item = await postClaim(this.relay, this.voters[0] as TestNode, { kind: 'statement', title: `ingest bench, after a restart, ${this.options.voters} voters`, body: '' });
    const count = Math.min(pairs + 1, this.voters.length);
    const requests: LoadRequest[] = [];
    for (let k = 0; k < count; k++) {
      const voter = this.voters[k] as TestNode;
      for (const phase of ['vote', 'accept'] as const) requests.push(voteRequest(voteBy(voter, item, 'yes', phase, this.sliceOf(k), systemClock)));
    }
    const { latencies } = await this.round(requests, 1, 201);
    // The first pair also pays for the restarted relay's first connection and item: left out.
    return { cold: latencies.filter((_, k) => k >= 2 && k % 2 === 0), warm: latencies.filter((_, k) => k >= 2 && k % 2 === 1) };
  }

  async close(): Promise<void> {
    await this.relay.close();
    this.data.remove();
  }

  /** `GET /me`, or `POST /me` writing a changed text each time (a changed row keeps the write honest), by every voter in turn. */
  private me(method: 'GET' | 'POST', round = ''): LoadRequest[] {
    return Array.from({ length: this.options.blockSize }, (_, k) => {
      const auth = (this.voters[k % this.voters.length] as TestNode).auth;
      return method === 'GET' ? { method, path: '/me', auth } : { method, path: '/me', auth, body: JSON.stringify({ about: `ingest bench, ${round} write ${k}` }) };
    });
  }

  private async round(requests: LoadRequest[], clients: number, expectStatus: number): Promise<Round> {
    // Sent before the counts begin: serialising the requests is the bench's work, not the relay's.
    await loadRound(this.client, { baseUrl: this.relay.baseUrl, requests, clients, expectStatus });
    const syncsBefore = this.counters.syncs;
    const commitsBefore = this.relay.service.commitCount();
    const loopBefore = mainThreadCpuMs();
    const result = await runLoadedRound(this.client);
    const loopMs = mainThreadCpuMs() - loopBefore;
    return {
      perSecond: (requests.length * 1000) / result.elapsedMs,
      latencies: result.latenciesMs,
      loopMsPerRequest: loopMs / requests.length,
      syncs: this.counters.syncs - syncsBefore,
      commits: this.relay.service.commitCount() - commitsBefore,
    };
  }
}

/**
 * CPU time of this process's main thread (the relay's event loop), ms: Linux's per-thread
 * `schedstat`, which a loaded machine cannot inflate as it does wall time (the event loop's busy
 * time, `performance.eventLoopUtilization`, counts the time the thread waits for a core).
 * Elsewhere the loop's busy time.
 */
function mainThreadCpuMs(): number {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return performance.eventLoopUtilization().active;
  }
}

/** The relay of a scene on host time, its WAL syncs (fdatasync on the thread pool, as by default) counted. */
function startScenesRelay(dir: string, selfSlice: QuorumSet, counters: { syncs: number }, checkAhead: boolean): Promise<RunningRelay> {
  const syncFile: SyncFile = (fd) =>
    new Promise((resolve, reject) => {
      counters.syncs++;
      fdatasync(fd, (err) => (err ? reject(err) : resolve()));
    });
  // Host time: registrations and votes carry real created_at values.
  return startRelayServer({ clock: systemClock, dataDir: dir, selfSlice, syncFile, ...(checkAhead ? {} : { signatureChecksAhead: null }), logger: { info: () => {}, warn: () => {}, error: (m, c) => console.error(m, c) } });
}

/** `verifyVote` per second over the statements' bytes as the route receives them (keys cached as in the relay). */
function verifyRate(votes: readonly LoadRequest[], nowMs: () => number): number {
  const parsed = votes.map((v) => JSON.parse(v.body ?? 'null') as Vote);
  const t0 = nowMs();
  for (const vote of parsed) if (!verifyVote(vote)) throw new Error('relay ingest bench: a signed statement does not verify');
  return (parsed.length * 1000) / (nowMs() - t0);
}

/** Runs one round on the load client (`loadRound`, then `runLoadedRound`). */
export async function runRound(client: ChildProcess, round: LoadRound): Promise<LoadResult> {
  await loadRound(client, round);
  return runLoadedRound(client);
}

/** Hands the load client a round to hold; settles once it holds it (see `LoadMessage`). */
export function loadRound(client: ChildProcess, round: LoadRound): Promise<void> {
  return ask(client, { kind: 'load', round }).then(() => undefined);
}

/** Runs the round the load client holds; settles with its result. */
export function runLoadedRound(client: ChildProcess): Promise<LoadResult> {
  return ask(client, { kind: 'run' }).then((answer) => {
    const result = answer as LoadResult;
    if (result.error) throw new Error(`relay ingest bench: ${result.error}`);
    return result;
  });
}

function ask(client: ChildProcess, message: LoadMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`relay load client exited (code ${code}) during a round`));
    client.once('exit', onExit);
    client.once('message', (answer: unknown) => {
      client.off('exit', onExit);
      resolve(answer);
    });
    client.send(message);
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

/**
 * The voters whose statements a round ingests: all of them when their votes and accepts fit in
 * `statements`, else `statements / 2` spread evenly over the whole population (indices, ascending).
 */
export function chosenVoters(voterCount: number, statements: number): number[] {
  const count = Math.min(voterCount, Math.max(1, Math.floor(statements / 2)));
  return Array.from({ length: count }, (_, j) => Math.floor((j * voterCount) / count));
}

/** The `vote` of every chosen voter, then their `accept`, all yes, signed now. */
function signAll(voters: readonly TestNode[], chosen: readonly number[], item: string, sliceOf: (k: number) => QuorumSet): Vote[] {
  const slices = chosen.map((k) => sliceOf(k));
  return (['vote', 'accept'] as const).flatMap((phase) => chosen.map((k, j) => voteBy(voters[k] as TestNode, item, 'yes', phase, slices[j] as QuorumSet, systemClock)));
}

function voteRequest(vote: Vote): LoadRequest {
  return { method: 'POST', path: `/items/${vote.item}/vote`, body: JSON.stringify(vote) };
}
