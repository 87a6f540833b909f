import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { BenchClient } from '../clients/bench/bench-client.js';
import { startBenchServer } from '../server/bench/start-bench-server.js';
import { type BenchRow, nowMs, percentile } from './measure.js';

/**
 * Flash-job throughput and p50/p99 latency on the mock backend (instant), against a bare HTTP
 * round trip on the same machine: the difference is what the bench service itself costs
 * (validation, ELF parsing, SQLite commits, dispatch, polling).
 */
export async function runBenchApiBench(options: { jobs?: number; roundTrips?: number; concurrency?: number } = {}): Promise<BenchRow[]> {
  const jobs = options.jobs ?? 300;
  const roundTrips = options.roundTrips ?? 2000;
  const concurrency = options.concurrency ?? 8;
  const rows: BenchRow[] = [];

  // 1. A bare node:http server answering a small JSON body: the floor for any HTTP API here.
  const bare = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end('{"ok":true}');
  });
  await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
  const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}/`;
  const bareSamples: number[] = [];
  for (let i = 0; i < roundTrips; i++) {
    const t0 = nowMs();
    await (await fetch(bareUrl)).text();
    bareSamples.push(nowMs() - t0);
  }
  bare.close();
  rows.push(
    { name: 'bare HTTP round trip, p50', value: percentile(bareSamples, 50), unit: 'ms', note: `node:http + fetch, ${roundTrips} sequential` },
    { name: 'bare HTTP round trip, p99', value: percentile(bareSamples, 99), unit: 'ms', note: '' },
  );

  const dataDir = mkdtempSync(path.join(tmpdir(), 'hilbench-bench-'));
  const boards = loadBoardCatalog();
  // One agent per client plus one: the default registration rate limit (10 a minute per address) would
  // answer 429 above 9 concurrent clients, and this measures the API, not the limiter.
  const server = await startBenchServer({ port: 0, dataDir, boards, clock: systemClock, publicBaseUrl: 'http://127.0.0.1', logger: quietLogger, limits: { agentRegistrationsPerMinute: 1_000_000 } });
  try {
    const client = new BenchClient({ baseUrl: server.url });
    const healthSamples: number[] = [];
    for (let i = 0; i < roundTrips; i++) {
      const t0 = nowMs();
      await client.request('GET', '/api/v1/health');
      healthSamples.push(nowMs() - t0);
    }
    rows.push(
      { name: 'GET /api/v1/health, p50', value: percentile(healthSamples, 50), unit: 'ms', note: 'express + SQLite check' },
      { name: 'GET /api/v1/health, p99', value: percentile(healthSamples, 99), unit: 'ms', note: '' },
    );

    const firmware = new Uint8Array(readFileSync(new URL('../firmware/examples/pico/hello.elf', import.meta.url)));
    const { token } = await client.register('bench');
    const submitSamples: number[] = [];
    const endToEndSamples: number[] = [];
    for (let i = 0; i < jobs; i++) {
      const t0 = nowMs();
      const job = await client.withToken(token).submitFlash('pico', firmware, { uartSeconds: 0.8 });
      submitSamples.push(nowMs() - t0);
      await client.withToken(token).waitForJob(job.job_id, { timeoutMs: 10_000 });
      endToEndSamples.push(nowMs() - t0);
    }
    rows.push(
      { name: 'POST /api/v1/jobs/flash (queued), p50', value: percentile(submitSamples, 50), unit: 'ms', note: `mock, ${firmware.length}-byte ELF, ${jobs} sequential` },
      { name: 'POST /api/v1/jobs/flash (queued), p99', value: percentile(submitSamples, 99), unit: 'ms', note: '' },
      { name: 'flash job submit -> done, p50', value: percentile(endToEndSamples, 50), unit: 'ms', note: 'polling GET /api/v1/jobs/{id} every 1 ms' },
      { name: 'flash job submit -> done, p99', value: percentile(endToEndSamples, 99), unit: 'ms', note: '' },
    );

    // Throughput: `concurrency` agents, each on its own board, submitting and waiting in a loop.
    const mockBoards = boards.slice(0, concurrency).map((b) => b.id);
    const agents = await Promise.all(mockBoards.map((_, k) => client.register(`bench-${k}`)));
    const perAgent = Math.ceil(jobs / agents.length);
    const armOrAvr = (id: string) => new Uint8Array(readFileSync(new URL(`../firmware/examples/${id}/hello.elf`, import.meta.url)));
    const t0 = nowMs();
    await Promise.all(
      agents.map(async (agent, k) => {
        const board = mockBoards[k]!;
        const image = armOrAvr(board);
        for (let i = 0; i < perAgent; i++) {
          const job = await client.withToken(agent.token).submitFlash(board, image, { uartSeconds: 0.8 });
          await client.withToken(agent.token).waitForJob(job.job_id, { timeoutMs: 10_000 });
        }
      }),
    );
    const elapsedMs = nowMs() - t0;
    rows.push({
      name: 'flash jobs completed per second',
      value: (perAgent * agents.length * 1000) / elapsedMs,
      unit: 'jobs/s',
      note: `${agents.length} agents on ${agents.length} mock boards, ${perAgent} jobs each`,
    });
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return rows;
}

const quietLogger = { info: () => {}, warn: () => {}, error: (m: string, c?: unknown) => console.error(m, c) };
