import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { BenchClient } from '../harness/clients/bench-client.js';
import { startBenchServer } from '../server/bench/bench-service.js';
import type { Logger } from '../server/http/logger.js';
import { createTestDatabase } from '../test/support/postgres-test-database.js';
import { type BenchRow, nowMs } from './measure.js';

const quietLogger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * Jobs per second through two replicas on one PostgreSQL database against one replica on the
 * same database, in the same run (issue 10): 8 agents, each on its own mock board, submitting and
 * waiting in a loop for `seconds`; each replica runs its own worker, both claiming from the one queue.
 */
export async function runReplicasBench(options: { seconds?: number } = {}): Promise<BenchRow[]> {
  const seconds = options.seconds ?? 8;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  try {
    database = await createTestDatabase();
  } catch (err) {
    return [{ name: 'replicas', value: Number.NaN, unit: '', note: `skipped: PostgreSQL did not answer (${(err as Error).message})` }];
  }
  const boards = loadBoardCatalog();
  const firmware = new Uint8Array(readFileSync(new URL('../scenarios/firmware/pico/hello.elf', import.meta.url)));
  const mockBoards = boards.slice(0, 8).map((b) => b.id);
  const dirs: string[] = [];
  const replica = () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'hilbench-perf-replica-'));
    dirs.push(dataDir);
    return startBenchServer({
      port: 0,
      dataDir,
      boards,
      databaseUrl: database.url,
      clock: systemClock,
      publicBaseUrl: 'http://127.0.0.1',
      logger: quietLogger,
      limits: { agentRegistrationsPerMinute: 1_000_000 },
      checkImage: () => undefined,
    });
  };
  const first = await replica();
  const second = await replica();
  try {
    const run = async (urls: string[]) => {
      const clients = urls.map((u) => new BenchClient({ baseUrl: u }));
      const agents = await Promise.all(mockBoards.map((_, k) => clients[k % clients.length]!.register(`perf-${k}-${urls.length}`)));
      let done = 0;
      const endMs = nowMs() + seconds * 1000;
      await Promise.all(
        mockBoards.map(async (board, k) => {
          const client = clients[k % clients.length]!;
          while (nowMs() < endMs) {
            const job = await client.flash(agents[k]!.token, { board, firmware, uartSeconds: 0.1 });
            await client.waitForJob(agents[k]!.token, job.job_id, { clock: systemClock, timeoutMs: 30_000, pollMs: 2 });
            done++;
          }
        }),
      );
      return done / seconds;
    };
    const one = await run([first.url]);
    const two = await run([first.url, second.url]);
    return [
      { name: 'jobs per second, one replica', value: one, unit: 'jobs/s', note: `PostgreSQL, mock boards, ${mockBoards.length} agents, ${seconds} s` },
      { name: 'jobs per second, two replicas', value: two, unit: 'jobs/s', note: 'agents spread over both; each replica runs a worker' },
      { name: 'two replicas / one replica', value: two / one, unit: 'ratio', note: 'writes serialise on one database lock (decision 0353)' },
    ];
  } finally {
    await Promise.all([first.close(), second.close()]);
    await database.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}
