import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { BenchClient } from '../clients/bench/bench-client.js';
import { createBackends } from '../harness/backend-registry.js';
import { RemoteWorker } from '../harness/worker/remote-worker.js';
import { startBenchServer } from '../server/bench/start-bench-server.js';
import type { Logger } from '../server/http/logger.js';
import { type BenchRow, nowMs, percentile } from './measure.js';

const quietLogger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
const BOARD = 'netduinoplus2';
const ADMIN = 'perf-admin';

/**
 * What a remote worker adds to a job (issue 10): the same QEMU job, submit to done, run by the
 * worker in the server's process and by a worker that claims it over HTTP on loopback (claim,
 * firmware fetch, UART batches, outcome). Both measured in this run, alternately.
 */
export async function runLabBench(options: { jobs?: number } = {}): Promise<BenchRow[]> {
  const jobs = options.jobs ?? 6;
  const boards = loadBoardCatalog().filter((b) => b.id === BOARD);
  const firmware = new Uint8Array(readFileSync(new URL(`../firmware/examples/${BOARD}/hello.elf`, import.meta.url)));
  const dirs: string[] = [];
  const dir = () => {
    const d = mkdtempSync(path.join(tmpdir(), 'hilbench-perf-lab-'));
    dirs.push(d);
    return d;
  };
  const backends = () => createBackends({ clock: systemClock, boards });

  const local = await startBenchServer({ port: 0, dataDir: dir(), boards, backends: backends(), backend: 'qemu', clock: systemClock, publicBaseUrl: 'http://127.0.0.1', logger: quietLogger });
  const lab = await startBenchServer({ port: 0, dataDir: dir(), boards, localWorker: false, adminToken: ADMIN, clock: systemClock, publicBaseUrl: 'http://127.0.0.1', logger: quietLogger });
  const created = (await (
    await fetch(`${lab.url}/admin/workers`, { method: 'POST', headers: { 'x-admin-token': ADMIN, 'content-type': 'application/json' }, body: JSON.stringify({ label: 'perf' }) })
  ).json()) as { token: string };
  const worker = new RemoteWorker({
    serverUrl: lab.url,
    token: created.token,
    clock: systemClock,
    boards,
    backends: backends(),
    choice: 'qemu',
    firmwareCacheDir: dir(),
    logInfo: () => undefined,
    logError: () => undefined,
  });
  await worker.start();
  try {
    const timeJob = async (url: string, token: string, client: BenchClient) => {
      const t0 = nowMs();
      const job = await client.withToken(token).submitFlash(BOARD, firmware, { uartSeconds: 0.5 });
      const done = await client.withToken(token).waitForJob(job.job_id, { timeoutMs: 60_000 });
      if (done.state !== 'done') throw new Error(`job on ${url} ended ${done.state}`);
      return nowMs() - t0;
    };
    const localClient = new BenchClient({ baseUrl: local.url });
    const labClient = new BenchClient({ baseUrl: lab.url });
    const localToken = (await localClient.register('perf')).token;
    const labToken = (await labClient.register('perf')).token;
    // Wait for the remote worker's board to be free (availability is cached for up to 5 s).
    for (let i = 0; i < 100 && (await labClient.request('GET', '/api/v1/boards')).text.includes('"offline"'); i++) await new Promise((r) => setTimeout(r, 100));
    const inProcess: number[] = [];
    const remote: number[] = [];
    for (let i = 0; i < jobs; i++) {
      inProcess.push(await timeJob(local.url, localToken, localClient));
      remote.push(await timeJob(lab.url, labToken, labClient));
    }
    const p50Local = percentile(inProcess, 50);
    const p50Remote = percentile(remote, 50);
    return [
      { name: `QEMU job submit -> done, worker in the server's process, p50`, value: p50Local, unit: 'ms', note: `${BOARD} hello.elf, 0.5 s of UART, ${jobs} jobs` },
      { name: 'the same job on a remote worker (HTTP, loopback), p50', value: p50Remote, unit: 'ms', note: 'claim, firmware fetch, UART batches, outcome over HTTP' },
      { name: 'remote worker / in-process worker', value: p50Remote / p50Local, unit: 'ratio', note: 'same run, alternating' },
      { name: 'added latency of a remote worker, p50', value: p50Remote - p50Local, unit: 'ms', note: '' },
    ];
  } finally {
    await worker.close();
    await Promise.all([local.close(), lab.close()]);
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}
