import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadFirmwareImage } from '../backends/image-check.js';
import { SimBackend } from '../backends/sim/sim-backend.js';
import { runRemoteDebugSession } from '../bin/debug-on-server.js';
import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { RemoteWorker } from '../harness/worker/remote-worker.js';
import { startBenchServer } from '../server/bench/start-bench-server.js';
import { consoleLogger } from '../server/http/logger.js';
import { OwnBootrom } from '../sim/rp2040/own-bootrom.js';
import { rp2040jsOwnServer } from './debug-own-servers.js';
import { forwardedServer, plainProxy, timeRegisterReads, walkToMain } from './gdb-measure.js';
import { type BenchRow, percentile } from './measure.js';

const root = path.resolve(import.meta.dirname, '..');
const ROUNDS = 3;
const READS_PER_ROUND = 100;
const ADMIN = 'perf-admin';
const elf = path.join(root, 'firmware/debug/pico.elf');

/**
 * `npm run bench` section (issue 32, decisions 0560, 0625): GDB through `hilbench debug --server` to a
 * sim pico on a remote worker (a lab server and a `hilbench worker` in this process, WebSockets on
 * loopback) against the same device's GDB stream behind a plain TCP forward in this process (as
 * perf/debug.bench.ts's "forwarded" row), that stream behind three plain TCP proxies (the remote
 * path's hops with nothing of hilbench in them: the floor, decision 0812) and rp2040js's own GDB
 * server (the baseline), alternately.
 */
export async function runDebugRemoteBench(): Promise<BenchRow[]> {
  const board = loadBoardCatalog().find((b) => b.id === 'pico')!;
  const device = await new SimBackend({ clock: systemClock }).open(board);
  await device.flash(loadFirmwareImage(readFileSync(elf)));
  const direct = await forwardedServer(device.debug!);
  // The floor of any relay with the remote path's hops (decision 0812): the forwarded stream behind
  // three proxies that only pipe bytes, where hilbench has the CLI, the server and the worker, each
  // a socket hop in and out on this one event loop.
  const hops = [await plainProxy(direct.port)];
  for (let i = 0; i < 2; i++) hops.push(await plainProxy(hops.at(-1)!.port));
  const relayed = hops.at(-1)!;
  // The baseline: rp2040js's own GDBServer on its own Simulator in this thread (perf/debug.bench.ts's).
  const own = await rp2040jsOwnServer(elf, new OwnBootrom());
  const toMainOn = (port: number) => walkToMain('gdb-multiarch', elf, port, root);
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
  const reads = { direct: [] as number[], remote: [] as number[], own: [] as number[], relayed: [] as number[] };
  const toMain = { direct: [] as number[], remote: [] as number[] };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      reads.own.push(...(await timeRegisterReads(own.port, READS_PER_ROUND)));
      reads.direct.push(...(await timeRegisterReads(direct.port, READS_PER_ROUND)));
      await direct.settled();
      reads.remote.push(...(await viaServer((port) => timeRegisterReads(port, READS_PER_ROUND))));
      reads.relayed.push(...(await timeRegisterReads(relayed.port, READS_PER_ROUND)));
      await direct.settled();
      toMain.direct.push(await toMainOn(direct.port));
      await direct.settled();
      toMain.remote.push(await viaServer(toMainOn));
    }
  } finally {
    await worker.close();
    await server.close();
    for (const hop of hops.reverse()) await hop.close();
    await direct.close();
    await own.close();
    await device.close();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(cache, { recursive: true, force: true });
  }
  const p50 = (samples: number[]) => percentile(samples, 50);
  return [
    { name: 'sim pico: register read (g) through hilbench debug --server and a remote worker, p50', value: p50(reads.remote) * 1000, unit: 'µs', note: `${reads.remote.length} reads in ${ROUNDS} rounds, alternating with the rows below; WebSockets on loopback` },
    { name: "sim pico: register read (g) on the device's stream behind a plain TCP forward (forwarded), p50", value: p50(reads.direct) * 1000, unit: 'µs', note: "the baseline: the same device's GDB stream in this process, no bridge, no server; not rp2040js's own GDBServer (perf/debug.bench.ts has that)" },
    { name: 'sim pico: register read, through a server and worker / forwarded', value: p50(reads.remote) / p50(reads.direct), unit: '×', note: "issue 32 goal: at most 3 through a server and worker (against the engine's own server); the forwarded stream is the engine's thread hop alone" },
    { name: "sim pico: register read (g) on rp2040js's GDBServer in this thread, p50", value: p50(reads.own) * 1000, unit: 'µs', note: "the issue's baseline: the engine's own GDB server, nothing of hilbench in between; alternately with the two rows above" },
    { name: "sim pico: register read, through a server and worker / rp2040js's own server", value: p50(reads.remote) / p50(reads.own), unit: '×', note: "issue 32 goal: at most 3; the remote path's floor is the three-proxy row below: six more socket hops on one event loop (decision 0812)" },
    { name: "sim pico: register read (g) on the forwarded stream behind three plain TCP proxies in this thread, p50", value: p50(reads.relayed) * 1000, unit: 'µs', note: 'alternately with the rows above: the hops of the remote path (the CLI, the server, the worker) as proxies that only pipe bytes, on this one event loop' },
    { name: 'sim pico: register read, through a server and worker / three plain proxies', value: p50(reads.remote) / p50(reads.relayed), unit: '×', note: "what is hilbench's own on the remote path: its parties' turns of their loops (WebSocket messages read, handled and sent; the RSP checks and text round trips are under a µs each): decisions 0812 and 0815" },
    { name: 'sim pico: gdb-multiarch: from target remote to halted at main (break main, continue), through a server and worker, p50', value: p50(toMain.remote), unit: 'ms', note: `timed by GDB's own clock, its start-up excluded; ${ROUNDS} runs` },
    { name: 'sim pico: the same on the forwarded stream, p50', value: p50(toMain.direct), unit: 'ms', note: 'alternately with the row above' },
  ];
}

// `npx tsx perf/debug-remote.bench.ts` measures this section alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  for (const row of await runDebugRemoteBench()) console.log(`${row.name}: ${row.value.toFixed(2)} ${row.unit}`);
}
