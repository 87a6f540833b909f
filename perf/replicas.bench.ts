import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { BenchClient } from '../clients/bench/bench-client.js';
import { startBenchServer } from '../server/bench/start-bench-server.js';
import type { Logger } from '../server/http/logger.js';
import { createTestDatabase } from '../test/support/postgres-test-database.js';
import { type BenchRow, nowMs } from './measure.js';
import { storeRoundTrips } from './store-round-trips.js';

const quietLogger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * Jobs per second through two replicas on one PostgreSQL database against one replica on the
 * same database, and one replica on PostgreSQL against one on the embedded SQLite default, in the
 * same run (issues 10 and 27): 8 agents, each on its own mock board, submitting and waiting in a
 * loop; each replica runs its own worker, all claiming from the one queue. The three set-ups take
 * turns in short phases (ABCABC...), so the machine's load falls on all of them alike.
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
    return startBenchServer({
      port: 0,
      dataDir,
      boards,
      ...(databaseUrl === undefined ? {} : { databaseUrl }),
      clock: systemClock,
      publicBaseUrl: 'http://127.0.0.1',
      logger: quietLogger,
      limits: { agentRegistrationsPerMinute: 1_000_000 },
      checkImage: () => undefined,
    });
  };
  const first = await replica(database.url);
  const second = await replica(database.url);
  const embedded = await replica(undefined);
  try {
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
    await Promise.all([first.close(), second.close(), embedded.close()]);
    await database.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}
