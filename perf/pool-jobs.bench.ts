/**
 * Board pools end to end (issue 27): `parallel` CI jobs on one board id at once, each opening a
 * queued session (`wait_seconds`) and running hello for 20 simulated seconds in it, against one
 * such job alone, alternately in one run. The server is `hilbench serve`'s: its in-process worker
 * runs the pool (default size: the host's cores for the simulators; QEMU sized explicitly).
 */
import { readFileSync } from 'node:fs';
import { cliPoolSizes } from '../harness/worker/pool-size.js';
import { startLocalBench } from './local-bench-server.js';
import type { BenchRow } from './measure.js';
import { parallelSpeedup } from './sim-threads.bench.js';

const helloElf = (board: string) => new Uint8Array(readFileSync(new URL(`../firmware/examples/${board}/hello.elf`, import.meta.url)));

interface PoolCase {
  board: string;
  /** The `--pool-size` values the server starts with ([] = the CLI's default). */
  poolSizeOptions: string[];
  uartSeconds: number;
}

async function poolSpeedup(c: PoolCase, parallel: number, rounds: number): Promise<{ row: BenchRow; poolSize: number }> {
  const { server, client, close } = await startLocalBench('pool', { localWorker: { poolSizes: cliPoolSizes(c.poolSizeOptions) } });
  try {
    const firmware = helloElf(c.board);
    const listed = (await (await fetch(`${server.url}/api/v1/boards`)).json()) as { boards?: Array<{ id: string; instances?: { total?: number } }> };
    const poolSize = listed.boards?.find((b) => b.id === c.board)?.instances?.total ?? 1;
    const runJob = async () => {
      const session = await client.openSession(c.board, { waitSeconds: 300 });
      try {
        const job = await session.flash(firmware, { uartSeconds: c.uartSeconds });
        if (job.state !== 'done') throw new Error(`a job on ${c.board} ended ${job.state}: ${JSON.stringify(job.failure)}`);
      } finally {
        await session.end();
      }
    };
    const t = await parallelSpeedup(runJob, { parallel, rounds });
    return {
      poolSize,
      row: {
        name: `${c.board} pool of ${poolSize}: ${parallel} CI jobs at once against one alone`,
        value: t.speedup,
        unit: 'x',
        note:
          `each a queued session (wait_seconds) running hello for ${c.uartSeconds} simulated s through the HTTP API; one alone ${(t.aloneMs / 1000).toFixed(1)} s, ` +
          `${parallel} at once ${(t.togetherMs / 1000).toFixed(1)} s (mean of ${rounds} alternating rounds after one unmeasured round); goal >= 1.6 on 2 cores`,
      },
    };
  } finally {
    await close();
  }
}

/** pico and uno with the CLI's default pool size, and a QEMU board with a pool of 2. */
export async function runPoolJobsBench(options: { parallel?: number; rounds?: number } = {}): Promise<BenchRow[]> {
  const parallel = options.parallel ?? 4;
  const rounds = options.rounds ?? 2;
  const cases: PoolCase[] = [
    { board: 'pico', poolSizeOptions: [], uartSeconds: 20 },
    { board: 'uno', poolSizeOptions: [], uartSeconds: 20 },
    { board: 'mps2-an385', poolSizeOptions: ['mps2-an385=2'], uartSeconds: 20 },
  ];
  const rows: BenchRow[] = [];
  for (const c of cases) rows.push((await poolSpeedup(c, parallel, rounds)).row);
  return rows;
}
