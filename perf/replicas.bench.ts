import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadBoardCatalog } from '../boards/catalog.js';
import { BenchClient } from '../clients/bench/bench-client.js';
import { createTestDatabase } from '../test/support/postgres-test-database.js';
import { type BenchRow, nowMs } from './measure.js';
import type { ReplicaProcessOptions } from './replica-process.js';
import { storeRoundTrips } from './store-round-trips.js';

/** How long a replica process may take to start listening (a loaded machine compiles the sources first). */
const REPLICA_START_MS = 120_000;

/** A replica in a process of its own (perf/replica-process.ts): its URL, and `close()` to end it. */
async function forkReplica(options: ReplicaProcessOptions): Promise<{ url: string; close: () => Promise<void> }> {
  const child: ChildProcess = fork(fileURLToPath(new URL('./replica-process.ts', import.meta.url)), [JSON.stringify(options)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = once(child, 'exit');
  const started = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`a replica process did not listen within ${REPLICA_START_MS} ms (${JSON.stringify(options)})`)), REPLICA_START_MS);
    child.once('message', (message) => {
      clearTimeout(timer);
      resolve((message as { url: string }).url);
    });
    void exited.then(([code]) => {
      clearTimeout(timer);
      reject(new Error(`a replica process ended with code ${String(code)} before it listened (${JSON.stringify(options)})`));
    });
  });
  let url: string;
  try {
    url = await started;
  } catch (err) {
    child.kill();
    throw err;
  }
  return {
    url,
    close: async () => {
      if (child.exitCode === null) child.send('close');
      await exited;
    },
  };
}

/**
 * Jobs per second through two replicas on one PostgreSQL database against one replica on the
 * same database, and one replica on PostgreSQL against one on the embedded SQLite default, in the
 * same run (issues 10 and 27): 8 agents, each on its own mock board, submitting and waiting in a
 * loop; each replica runs its own worker, all claiming from the one queue. Each replica is a
 * process of its own, as deployed, and the agents are this process: an outside client (decision
 * 0600; replicas sharing one event loop could not add throughput). The three set-ups take turns in
 * short phases (ABCABC...), so the machine's load falls on all of them alike.
 */
export async function runReplicasBench(options: { seconds?: number; rounds?: number } = {}): Promise<BenchRow[]> {
  const phaseSeconds = options.seconds ?? 2;
  const rounds = options.rounds ?? 4;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  try {
    database = await createTestDatabase();
  } catch (err) {
    return [{ name: 'replicas', value: Number.NaN, unit: '', note: `skipped: PostgreSQL did not answer (${(err as Error).message})` }];
  }
  const boards = loadBoardCatalog();
  const firmware = new Uint8Array(readFileSync(new URL('../firmware/examples/pico/hello.elf', import.meta.url)));
  const mockBoards = boards.slice(0, 8).map((b) => b.id);
  const dirs: string[] = [];
  const replica = (databaseUrl: string | undefined) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'hilbench-perf-replica-'));
    dirs.push(dataDir);
    return forkReplica({ dataDir, ...(databaseUrl === undefined ? {} : { databaseUrl }) });
  };
  const started = await Promise.allSettled([replica(database.url), replica(database.url), replica(undefined)]);
  const [first, second, embedded] = started.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
  try {
    const failed = started.find((s) => s.status === 'rejected');
    if (failed || !first || !second || !embedded) throw (failed as PromiseRejectedResult).reason;
    /** A set-up: its replicas' URLs, agents registered once, and its jobs and seconds summed over its phases. */
    const setUp = async (name: string, urls: string[]) => {
      const clients = urls.map((u) => new BenchClient({ baseUrl: u }));
      const agents = await Promise.all(mockBoards.map((_, k) => clients[k % clients.length]!.register(`perf-${name}-${k}`)));
      return { clients, agents, jobs: 0, seconds: 0 };
    };
    const runPhase = async (set: Awaited<ReturnType<typeof setUp>>) => {
      const startMs = nowMs();
      const endMs = startMs + phaseSeconds * 1000;
      await Promise.all(
        mockBoards.map(async (board, k) => {
          const client = set.clients[k % set.clients.length]!;
          while (nowMs() < endMs) {
            const job = await client.withToken(set.agents[k]!.token).submitFlash(board, firmware, { uartSeconds: 0.1 });
            await client.withToken(set.agents[k]!.token).waitForJob(job.job_id, { timeoutMs: 30_000 });
            set.jobs++;
          }
        }),
      );
      set.seconds += (nowMs() - startMs) / 1000;
    };
    const one = await setUp('one', [first.url]);
    const two = await setUp('two', [first.url, second.url]);
    const sqlite = await setUp('sqlite', [embedded.url]);
    for (let round = 0; round < rounds; round++) for (const set of [one, two, sqlite]) await runPhase(set);
    const rate = (set: typeof one) => set.jobs / set.seconds;
    // Counted on fresh stores of each kind (decision 0545): what each job costs the database, beside the timed ratio.
    const counted = async (inSession: boolean) => {
      const scratch = await createTestDatabase();
      try {
        return await storeRoundTrips(scratch.url, { inSession });
      } finally {
        await scratch.drop();
      }
    };
    const [alone, inSession] = [await counted(false), await counted(true)];
    const trips = (label: string, t: { statementsPerJob: number; transactionsPerJob: number } | undefined): BenchRow => ({
      name: `store statements per job, ${label}`,
      value: t?.statementsPerJob ?? Number.NaN,
      unit: 'statements',
      note: `${t?.transactionsPerJob ?? '?'} transactions (on PostgreSQL each adds BEGIN and COMMIT round trips); counted, not timed: submit, claim, running, one renewal, done, one read`,
    });
    const note = `${mockBoards.length} agents on mock boards, ${rounds} alternating phases of ${phaseSeconds} s each`;
    return [
      { name: 'jobs per second, one replica', value: rate(one), unit: 'jobs/s', note: `PostgreSQL, ${note}` },
      { name: 'jobs per second, two replicas', value: rate(two), unit: 'jobs/s', note: 'agents spread over both; each replica runs a worker' },
      { name: 'jobs per second, one replica on SQLite', value: rate(sqlite), unit: 'jobs/s', note: 'the embedded default, same load' },
      { name: 'two replicas / one replica', value: rate(two) / rate(one), unit: 'ratio', note: 'goal >= 1.3 (issue 27); no global write lock (decision 0515)' },
      { name: 'one replica, PostgreSQL / SQLite', value: rate(one) / rate(sqlite), unit: 'ratio', note: 'goal >= 0.7 (issue 27)' },
      trips('SQLite, a job with its own lease', alone.sqlite),
      trips('PostgreSQL, a job with its own lease', alone.postgres),
      trips('SQLite, a job in a session', inSession.sqlite),
      trips('PostgreSQL, a job in a session', inSession.postgres),
    ];
  } finally {
    await Promise.all([first?.close(), second?.close(), embedded?.close()]);
    await database.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}
