import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadBoardCatalog } from '../boards/catalog.js';
import { BenchClient } from '../clients/bench/bench-client.js';
import { createTestDatabase } from '../test/support/postgres-test-database.js';
import { type BenchRow, cpuMs, nowMs } from './measure.js';
import { databaseCpu, processCpuMs } from './process-cpu.js';
import type { ReplicaProcessOptions } from './replica-process.js';
import { storeRoundTrips } from './store-round-trips.js';

/** How long a replica process may take to start listening (a loaded machine compiles the sources first). */
const REPLICA_START_MS = 120_000;

/** A replica in a process of its own (perf/replica-process.ts): its URL, and `close()` to end it. */
async function forkReplica(options: ReplicaProcessOptions): Promise<{ url: string; pid: number; close: () => Promise<void> }> {
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
    pid: child.pid!,
    close: async () => {
      if (child.exitCode === null) child.send('close');
      await exited;
    },
  };
}

/** A set-up's totals over its phases: jobs, seconds, and CPU ms by party (/proc; NaN off Linux). */
interface Tally {
  jobs: number;
  seconds: number;
  clientCpuMs: number;
  replicaCpuMs: number;
  databaseCpuMs: number;
  transactions: number;
}

/**
 * Jobs per second through two replicas on one PostgreSQL database against one replica on a
 * database of its own, and one replica on PostgreSQL against one on the embedded SQLite default,
 * in the same run (issues 10 and 27): 8 agents, each on its own mock board, submitting and waiting
 * in a loop; each replica runs its own worker, claiming from its set-up's queue. Each replica is a
 * process of its own, as deployed, and the agents are this process: an outside client (decision
 * 0600; replicas sharing one event loop could not add throughput). The three set-ups take turns in
 * short phases (ABCABC...), so the machine's load falls on all of them alike, after a round of
 * phases not counted (each replica's warm-up: compiling its hot paths, filling its caches). Each set-up has its
 * own database, so no worker outside the phase claims its jobs (the one-replica phase once shared
 * its database with the second replica, whose idle worker claimed some of them: decision 0720).
 * Beside the rates: the CPU time per job of each party (this client, the set-up's replicas, the
 * PostgreSQL backends of its database) and the transactions its database committed per job, from
 * which decision 0650's bound on these two cores follows.
 */
export async function runReplicasBench(options: { seconds?: number; rounds?: number } = {}): Promise<BenchRow[]> {
  const phaseSeconds = options.seconds ?? 2;
  const rounds = options.rounds ?? 4;
  const databases: Awaited<ReturnType<typeof createTestDatabase>>[] = [];
  try {
    databases.push(await createTestDatabase(), await createTestDatabase());
  } catch (err) {
    await Promise.all(databases.map((d) => d.drop()));
    return [{ name: 'replicas', value: Number.NaN, unit: '', note: `skipped: PostgreSQL did not answer (${(err as Error).message})` }];
  }
  const [oneDatabase, twoDatabase] = databases as [(typeof databases)[number], (typeof databases)[number]];
  const boards = loadBoardCatalog();
  const mockBoards = boards.slice(0, 8).map((b) => b.id);
  // Each board's own example, so every job flashes and runs (the pico's image on these boards
  // failed as a bad image as soon as it was claimed: six agents of eight measured failures).
  const firmware = new Map(mockBoards.map((b) => [b, new Uint8Array(readFileSync(new URL(`../firmware/examples/${b}/hello.elf`, import.meta.url)))]));
  const dirs: string[] = [];
  const replica = (databaseUrl: string | undefined) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'hilbench-perf-replica-'));
    dirs.push(dataDir);
    return forkReplica({ dataDir, ...(databaseUrl === undefined ? {} : { databaseUrl }) });
  };
  const started = await Promise.allSettled([replica(oneDatabase.url), replica(twoDatabase.url), replica(twoDatabase.url), replica(undefined)]);
  const replicas = started.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
  const watchers: Awaited<ReturnType<typeof databaseCpu>>[] = [];
  try {
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const [alone, first, second, embedded] = replicas as NonNullable<(typeof replicas)[number]>[] as [Replica, Replica, Replica, Replica];
    /** A set-up: its replicas, its database's watcher, agents registered once, and its totals over its phases. */
    const setUp = async (name: string, members: Replica[], databaseUrl: string | undefined) => {
      const clients = members.map((r) => new BenchClient({ baseUrl: r.url }));
      const agents = await Promise.all(mockBoards.map((_, k) => clients[k % clients.length]!.register(`perf-${name}-${k}`)));
      const watcher = databaseUrl === undefined ? undefined : await databaseCpu(databaseUrl);
      if (watcher) watchers.push(watcher);
      const tally: Tally = { jobs: 0, seconds: 0, clientCpuMs: 0, replicaCpuMs: 0, databaseCpuMs: 0, transactions: 0 };
      return { members, clients, agents, watcher, tally };
    };
    const runPhase = async (set: Awaited<ReturnType<typeof setUp>>, options: { counted: boolean }) => {
      const cpuBefore = await partiesCpu(set.members, set.watcher);
      const startMs = nowMs();
      const endMs = startMs + phaseSeconds * 1000;
      let jobs = 0;
      await Promise.all(
        mockBoards.map(async (board, k) => {
          const client = set.clients[k % set.clients.length]!.withToken(set.agents[k]!.token);
          while (nowMs() < endMs) {
            const job = await client.submitFlash(board, firmware.get(board)!, { uartSeconds: 0.1 });
            const ended = await client.waitForJob(job.job_id, { timeoutMs: 30_000 });
            if (ended.state !== 'done') throw new Error(`job ${ended.job_id} on ${board} ended ${ended.state}: ${ended.failure?.message ?? '?'}`);
            jobs++;
          }
        }),
      );
      const seconds = (nowMs() - startMs) / 1000;
      const cpuAfter = await partiesCpu(set.members, set.watcher);
      if (!options.counted) return;
      set.tally.jobs += jobs;
      set.tally.seconds += seconds;
      set.tally.clientCpuMs += cpuAfter.client - cpuBefore.client;
      set.tally.replicaCpuMs += cpuAfter.replicas - cpuBefore.replicas;
      set.tally.databaseCpuMs += cpuAfter.database - cpuBefore.database;
      set.tally.transactions += cpuAfter.transactions - cpuBefore.transactions;
    };
    const one = await setUp('one', [alone], oneDatabase.url);
    const two = await setUp('two', [first, second], twoDatabase.url);
    const sqlite = await setUp('sqlite', [embedded], undefined);
    // A round first that is not counted: each replica compiles its hot paths (V8's compiler threads,
    // counted in its process's CPU) and fills its caches once in its life, and two replicas do it
    // twice, over half the jobs each. A lab's replicas run for hours; the rows are their steady state.
    for (const set of [one, two, sqlite]) await runPhase(set, { counted: false });
    for (let round = 0; round < rounds; round++) for (const set of [one, two, sqlite]) await runPhase(set, { counted: true });
    const rate = (t: Tally) => t.jobs / t.seconds;
    // Counted on fresh stores of each kind (decision 0545): what each job costs the database, beside the timed ratio.
    const counted = async (inSession: boolean) => {
      const scratch = await createTestDatabase();
      try {
        return await storeRoundTrips(scratch.url, { inSession });
      } finally {
        await scratch.drop();
      }
    };
    const [ownLease, inSession] = [await counted(false), await counted(true)];
    const trips = (label: string, t: { statementsPerJob: number; transactionsPerJob: number } | undefined): BenchRow => ({
      name: `store statements per job, ${label}`,
      value: t?.statementsPerJob ?? Number.NaN,
      unit: 'statements',
      note: `${t?.transactionsPerJob ?? '?'} transactions (on PostgreSQL BEGIN goes with the first statement and, in these, COMMIT with the last: decisions 0600, 0980); counted, not timed: submit, claim, running, one renewal, done, one read`,
    });
    const note = `${mockBoards.length} agents on mock boards, ${rounds} alternating phases of ${phaseSeconds} s each, after a round not counted`;
    const o = one.tally;
    const perJob = (ms: number, t: Tally) => ms / t.jobs;
    const totalPerJob = (t: Tally) => (t.clientCpuMs + t.replicaCpuMs + t.databaseCpuMs) / t.jobs;
    return [
      { name: 'jobs per second, one replica', value: rate(o), unit: 'jobs/s', note: `PostgreSQL, ${note}` },
      { name: 'jobs per second, two replicas', value: rate(two.tally), unit: 'jobs/s', note: 'agents spread over both; each replica runs a worker; a database of their own' },
      { name: 'jobs per second, one replica on SQLite', value: rate(sqlite.tally), unit: 'jobs/s', note: 'the embedded default, same load' },
      { name: 'two replicas / one replica', value: rate(two.tally) / rate(o), unit: 'ratio', note: 'goal >= 1.3 (issue 27); no global write lock (decision 0515)' },
      { name: 'one replica, PostgreSQL / SQLite', value: rate(o) / rate(sqlite.tally), unit: 'ratio', note: 'goal >= 0.7 (issue 27)' },
      { name: 'CPU per job, one replica: the client', value: perJob(o.clientCpuMs, o), unit: 'ms', note: 'this process: the 8 agents (process.cpuUsage)' },
      { name: 'CPU per job, one replica: the replica', value: perJob(o.replicaCpuMs, o), unit: 'ms', note: 'R: its process, /proc' },
      { name: 'CPU per job, one replica: PostgreSQL', value: perJob(o.databaseCpuMs, o), unit: 'ms', note: `the backends of its database, /proc; ${(o.transactions / o.jobs).toFixed(1)} transactions committed per job` },
      { name: 'CPU per job, two replicas: all parties', value: totalPerJob(two.tally), unit: 'ms', note: `client ${perJob(two.tally.clientCpuMs, two.tally).toFixed(1)}, replicas ${perJob(two.tally.replicaCpuMs, two.tally).toFixed(1)}, PostgreSQL ${perJob(two.tally.databaseCpuMs, two.tally).toFixed(1)}; ${(two.tally.transactions / two.tally.jobs).toFixed(1)} transactions per job` },
      { name: 'two / one allowed by CPU on 2 cores (2R/C)', value: (2 * perJob(o.replicaCpuMs, o)) / totalPerJob(o), unit: 'ratio', note: 'R and C of the one-replica phases (decision 0650): the most two replicas can give over one when every core is busy' },
      trips('SQLite, a job with its own lease', ownLease.sqlite),
      trips('PostgreSQL, a job with its own lease', ownLease.postgres),
      trips('SQLite, a job in a session', inSession.sqlite),
      trips('PostgreSQL, a job in a session', inSession.postgres),
    ];
  } finally {
    await Promise.all(watchers.map((w) => w.close()));
    await Promise.all(replicas.map((r) => r?.close()));
    await Promise.all(databases.map((d) => d.drop()));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

type Replica = Awaited<ReturnType<typeof forkReplica>>;

/** CPU ms so far of this process, of `replicas` and of the database `watcher` watches, and its transactions committed. */
async function partiesCpu(replicas: readonly Replica[], watcher: Awaited<ReturnType<typeof databaseCpu>> | undefined): Promise<{ client: number; replicas: number; database: number; transactions: number }> {
  const database = watcher ? await watcher.read() : { cpuMs: 0, transactions: 0 };
  return {
    client: cpuMs(),
    replicas: replicas.reduce((sum, r) => sum + (processCpuMs(r.pid) ?? Number.NaN), 0),
    database: database.cpuMs,
    transactions: database.transactions,
  };
}
