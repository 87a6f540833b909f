import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import type { DeviceDebug } from '../backends/backend.js';
import { loadFirmwareImage } from '../backends/image-check.js';
import { SimBackend } from '../backends/sim/sim-backend.js';
import { runRemoteDebugSession } from '../bin/debug-on-server.js';
import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { rspPacket } from '../core/gdb/rsp-packet.js';
import { RemoteWorker } from '../harness/worker/remote-worker.js';
import { startBenchServer } from '../server/bench/start-bench-server.js';
import { consoleLogger } from '../server/http/logger.js';
import { type BenchRow, nowMs, percentile } from './measure.js';

const root = path.resolve(import.meta.dirname, '..');
const ROUNDS = 3;
const READS_PER_ROUND = 100;
const ADMIN = 'perf-admin';
const elf = path.join(root, 'scenarios/debug-firmware/pico.elf');

/** The engine's own GDB server (rp2040js, freshly attached per connection) behind a plain TCP forward: the baseline. */
async function directServer(debug: DeviceDebug): Promise<{ port: number; settled: () => Promise<unknown>; close: () => Promise<void> }> {
  let streamClosed: Promise<unknown> = Promise.resolve();
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    socket.on('error', () => undefined);
    streamClosed = debug.attach().then((stream) => {
      stream.onData((text) => socket.write(Buffer.from(text, 'latin1')));
      socket.on('data', (data: Buffer) => stream.write(data.toString('latin1')));
      void stream.closed.then(() => socket.end());
      socket.once('close', () => void stream.close());
      return stream.closed;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  return { port: address.port, settled: () => streamClosed, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** Connects, waits for the answer to `?`, then times `count` register reads (`g`) one at a time; per-read host ms. */
async function timeRegisterReads(port: number, count: number): Promise<number[]> {
  const socket = net.createConnection({ port, host: '127.0.0.1' });
  socket.setNoDelay(true);
  await new Promise((resolve) => socket.once('connect', resolve));
  let buffer = '';
  let waiter: (() => void) | undefined;
  socket.on('data', (data: Buffer) => {
    buffer += data.toString('latin1');
    waiter?.();
  });
  const reply = () =>
    new Promise<void>((resolve) => {
      const check = () => {
        const end = /\$[^#]*#[0-9a-f]{2}/.exec(buffer);
        if (!end) return;
        buffer = buffer.slice(end.index + end[0].length);
        waiter = undefined;
        socket.write('+');
        resolve();
      };
      waiter = check;
      check();
    });
  socket.write(rspPacket('?'));
  await reply();
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = nowMs();
    socket.write(rspPacket('g'));
    await reply();
    samples.push(nowMs() - t0);
  }
  socket.destroy();
  await new Promise((resolve) => socket.once('close', resolve));
  return samples;
}

/** GDB in batch mode from `target remote` to halted at main (then kill); host ms for the whole GDB process. */
async function walkToMain(port: number): Promise<number> {
  const t0 = nowMs();
  const result = await execa('gdb-multiarch', ['-nx', '--batch', '-ex', `file ${elf}`, '-ex', `target remote localhost:${port}`, '-ex', 'break main', '-ex', 'continue', '-ex', 'kill'], { reject: false, cwd: root });
  if (!/Breakpoint 1, main/.test(result.stdout)) throw new Error(`gdb-multiarch did not stop at main: ${result.stdout} ${result.stderr}`);
  return nowMs() - t0;
}

/**
 * `npm run bench` section (issue 32, decision 0560): GDB through `hilbench debug --server` to a
 * sim pico on a remote worker (a lab server and a `hilbench worker` in this process, HTTP on
 * loopback) against the same engine's own GDB server on a local device, alternately (ABAB).
 */
export async function runDebugRemoteBench(): Promise<BenchRow[]> {
  const board = loadBoardCatalog().find((b) => b.id === 'pico')!;
  const device = await new SimBackend({ clock: systemClock }).open(board);
  await device.flash(loadFirmwareImage(readFileSync(elf)));
  const direct = await directServer(device.debug!);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hilbench-perf-debug-'));
  const cache = mkdtempSync(path.join(tmpdir(), 'hilbench-perf-debug-cache-'));
  const quiet = { ...consoleLogger, info: () => undefined, warn: () => undefined };
  const server = await startBenchServer({ port: 0, dataDir, publicBaseUrl: 'http://bench.perf', boards: loadBoardCatalog(), localWorker: false, adminToken: ADMIN, logger: quiet });
  const created = await fetch(`${server.url}/admin/workers`, { method: 'POST', headers: { 'x-admin-token': ADMIN }, body: new URLSearchParams({ label: 'perf-debug' }) });
  const { token: workerToken } = (await created.json()) as { token: string };
  const worker = new RemoteWorker({
    serverUrl: server.url,
    token: workerToken,
    clock: systemClock,
    boards: [board],
    backends: { sim: new SimBackend({ clock: systemClock }) },
    choice: 'sim',
    firmwareCacheDir: cache,
    logInfo: () => undefined,
    logError: () => undefined,
  });
  await worker.start();
  const registered = await fetch(`${server.url}/api/v1/agents/register`, { method: 'POST', body: new URLSearchParams({ label: 'perf' }) });
  const { token } = (await registered.json()) as { token: string };
  const firmware = readFileSync(elf);
  /** One `hilbench debug --server` session: `fn` gets its GDB port; the job is then cancelled unless GDB ended it. */
  const viaServer = async <T>(fn: (port: number) => Promise<T>): Promise<T> => {
    const interrupt = new AbortController();
    let listening: (port: number) => void = () => undefined;
    const port = new Promise<number>((resolve) => (listening = resolve));
    const session = runRemoteDebugSession({
      server: server.url, token, board: 'pico', firmware, gdbPort: 0, idleTimeoutSeconds: 600, afterDetachSeconds: 1,
      onUart: () => undefined, log: () => undefined, onListening: (p) => listening(p), signal: interrupt.signal,
    });
    try {
      return await fn(await Promise.race([port, session.then((o) => Promise.reject(new Error(`the debug session ended first: ${o.reason}`)))]));
    } finally {
      interrupt.abort();
      await session;
    }
  };
  const reads = { direct: [] as number[], remote: [] as number[] };
  const toMain = { direct: [] as number[], remote: [] as number[] };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      reads.direct.push(...(await timeRegisterReads(direct.port, READS_PER_ROUND)));
      await direct.settled();
      reads.remote.push(...(await viaServer((port) => timeRegisterReads(port, READS_PER_ROUND))));
      toMain.direct.push(await walkToMain(direct.port));
      await direct.settled();
      toMain.remote.push(await viaServer(walkToMain));
    }
  } finally {
    await worker.close();
    await server.close();
    await direct.close();
    await device.close();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(cache, { recursive: true, force: true });
  }
  const p50 = (samples: number[]) => percentile(samples, 50);
  return [
    { name: 'sim pico: register read (g) through hilbench debug --server and a remote worker, p50', value: p50(reads.remote) * 1000, unit: 'µs', note: `${reads.remote.length} reads in ${ROUNDS} rounds, alternating with the row below; HTTP long polls on loopback` },
    { name: "sim pico: register read (g) on the engine's own GDB server, p50", value: p50(reads.direct) * 1000, unit: 'µs', note: 'rp2040js behind a plain TCP forward, in this process' },
    { name: 'sim pico: register read, through a server and worker / own server', value: p50(reads.remote) / p50(reads.direct), unit: '×', note: 'issue 32 goal: at most 3 through a server and worker' },
    { name: 'sim pico: gdb-multiarch: target remote to halted at main, through a server and worker, p50', value: p50(toMain.remote), unit: 'ms', note: `the whole GDB process (its start-up included), ${ROUNDS} runs` },
    { name: "sim pico: the same on the engine's own GDB server, p50", value: p50(toMain.direct), unit: 'ms', note: 'alternately with the row above' },
  ];
}

// `npx tsx perf/debug-remote.bench.ts` measures this section alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  for (const row of await runDebugRemoteBench()) console.log(`${row.name}: ${row.value.toFixed(2)} ${row.unit}`);
}
