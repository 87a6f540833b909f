/**
 * Simulators on every core (issue 27): each sim device's engine runs in a worker thread of its
 * own, so (a) simulated devices running at once use the host's cores, and (b) the server's own
 * answers stay fast while they run. Both measured alternately in one run.
 */
import { readFileSync } from 'node:fs';
import { NANOS_PER_SECOND } from '../backends/backend.js';
import { loadFirmwareImage } from '../backends/image-check.js';
import { SimBackend } from '../backends/sim/sim-backend.js';
import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { startLocalBench } from './local-bench-server.js';
import { type BenchRow, nowMs, percentile } from './measure.js';

const helloElf = (board: string) => new Uint8Array(readFileSync(new URL(`../firmware/examples/${board}/hello.elf`, import.meta.url)));

/** Host ms of one job alone and of `parallel` jobs at once, averaged over `rounds` alternating rounds (ABAB). */
export interface ParallelTiming {
  aloneMs: number;
  togetherMs: number;
  /** `parallel × aloneMs / togetherMs`: 1 when jobs at once take as long as one after the other, `parallel` at best. */
  speedup: number;
}

/**
 * Runs `runJob` alone, then `parallel` of them at once, `rounds` times, after one unmeasured
 * round of `parallel` at once (engine threads started and their JIT warm, as in a running lab).
 * `runJob` is any "run one job" callback: a device on a backend here, a job through a board
 * pool's HTTP API elsewhere.
 */
export async function parallelSpeedup(runJob: () => Promise<void>, options: { parallel: number; rounds: number }): Promise<ParallelTiming> {
  await Promise.all(Array.from({ length: options.parallel }, () => runJob()));
  let aloneMs = 0;
  let togetherMs = 0;
  for (let round = 0; round < options.rounds; round++) {
    let t0 = nowMs();
    await runJob();
    aloneMs += nowMs() - t0;
    t0 = nowMs();
    await Promise.all(Array.from({ length: options.parallel }, () => runJob()));
    togetherMs += nowMs() - t0;
  }
  aloneMs /= options.rounds;
  togetherMs /= options.rounds;
  return { aloneMs, togetherMs, speedup: (options.parallel * aloneMs) / togetherMs };
}

/** One job at the backend level: open the board, flash its hello firmware, run `simulatedSeconds`, close. */
function backendJob(backend: SimBackend, boardId: string, simulatedSeconds: number): () => Promise<void> {
  const board = loadBoardCatalog().find((b) => b.id === boardId)!;
  const image = loadFirmwareImage(helloElf(boardId));
  return async () => {
    const device = await backend.open(board);
    try {
      await device.flash(image);
      const stop = await device.run(simulatedSeconds * NANOS_PER_SECOND);
      if (stop.reason !== 'elapsed') throw new Error(`hello on ${boardId} stopped early: ${JSON.stringify(stop)}`);
    } finally {
      await device.close();
    }
  };
}

/** (a) 4 simulated devices of `simulatedSeconds` at once against one alone, per board, on the sim backend. */
export async function runSimParallelBench(options: { simulatedSeconds?: number; parallel?: number; rounds?: number } = {}): Promise<BenchRow[]> {
  const simulatedSeconds = options.simulatedSeconds ?? 20;
  const parallel = options.parallel ?? 4;
  const rounds = options.rounds ?? 2;
  const backend = new SimBackend({ clock: systemClock, onUnmodelled: () => undefined });
  const rows: BenchRow[] = [];
  try {
    for (const boardId of ['pico', 'uno']) {
      const t = await parallelSpeedup(backendJob(backend, boardId, simulatedSeconds), { parallel, rounds });
      rows.push({
        name: `sim ${boardId}: ${parallel} devices at once against one alone`,
        value: t.speedup,
        unit: 'x',
        note: `hello firmware, ${simulatedSeconds} simulated s each, open to close; one alone ${(t.aloneMs / 1000).toFixed(1)} s, ${parallel} at once ${(t.togetherMs / 1000).toFixed(1)} s (mean of ${rounds} alternating rounds after one unmeasured round of ${parallel}); goal >= 1.6 on 2 cores`,
      });
    }
  } finally {
    backend.close();
  }
  return rows;
}

/** `GET /api/v1/health` latencies in host ms, `count` requests one after another. */
async function healthLatencies(baseUrl: string, count: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = nowMs();
    const response = await fetch(`${baseUrl}/api/v1/health`);
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`GET /api/v1/health answered ${response.status}`);
    samples.push(nowMs() - t0);
  }
  return samples;
}

/**
 * (b) `GET /api/v1/health` p99 while every simulated board of a `hilbench serve`-like server runs
 * a job (pico and uno, one instance each), against the same server idle, alternately.
 */
export async function runHealthUnderSimLoadBench(options: { requests?: number; rounds?: number; uartSeconds?: number } = {}): Promise<BenchRow[]> {
  const requests = options.requests ?? 300;
  const rounds = options.rounds ?? 2;
  const uartSeconds = options.uartSeconds ?? 20;
  const { server, client, close } = await startLocalBench('sim-threads');
  try {
    const idle: number[] = [];
    const busy: number[] = [];
    await healthLatencies(server.url, 50);
    for (let round = 0; round < rounds; round++) {
      idle.push(...(await healthLatencies(server.url, requests)));
      const jobs = await Promise.all(['pico', 'uno'].map((board) => client.submitFlash(board, helloElf(board), { uartSeconds })));
      for (const job of jobs) {
        for (let seen = await client.getJob(job.job_id); seen.state !== 'running'; seen = await client.getJob(job.job_id)) {
          if (seen.state === 'done' || seen.state === 'failed') throw new Error(`job ${job.job_id} on ${seen.board} ended before the busy phase began`);
        }
      }
      busy.push(...(await healthLatencies(server.url, requests)));
      for (const job of jobs) {
        const seen = await client.getJob(job.job_id);
        if (seen.state !== 'running') throw new Error(`job ${job.job_id} on ${seen.board} ended during the busy phase: raise uartSeconds`);
      }
      await Promise.all(jobs.map((job) => client.waitForJob(job.job_id)));
    }
    const idleP99 = percentile(idle, 99);
    const busyP99 = percentile(busy, 99);
    return [
      { name: 'GET /api/v1/health p99, idle', value: idleP99, unit: 'ms', note: `${idle.length} requests one after another, ${rounds} rounds alternating with the busy ones` },
      { name: 'GET /api/v1/health p99, every simulated board running a job', value: busyP99, unit: 'ms', note: `pico and uno each running hello for ${uartSeconds} simulated s` },
      { name: 'health p99 busy / idle', value: busyP99 / idleP99, unit: 'x', note: 'goal <= 1.5' },
    ];
  } finally {
    await close();
  }
}
