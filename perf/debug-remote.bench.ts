import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadFirmwareImage } from '../backends/image-check.js';
import { SimBackend } from '../backends/sim/sim-backend.js';
import { runRemoteDebugSession } from '../bin/debug-on-server.js';
import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { startBenchServer } from '../server/bench/start-bench-server.js';
import { consoleLogger } from '../server/http/logger.js';
import { OwnBootrom } from '../sim/rp2040/own-bootrom.js';
import { startLabWorker, startServedDevice } from './debug-lab-processes.js';
import { rp2040jsOwnServer } from './debug-own-servers.js';
import { forwardedServer, plainProxy, timeRegisterReads, walkToMain } from './gdb-measure.js';
import { tcpToWebSocket, webSocketToWebSocket } from './websocket-pipes.js';
import { type BenchRow, percentile } from './measure.js';

const root = path.resolve(import.meta.dirname, '..');
const ROUNDS = 3;
const READS_PER_ROUND = 100;
const ADMIN = 'perf-admin';
const elf = path.join(root, 'firmware/debug/pico.elf');

/**
 * `npm run bench` section (issue 32, decisions 0625, 0812, 0910): GDB through `hilbench debug --server`
 * to a sim pico on a remote worker, as a lab runs it (a lab server in this process, `hilbench worker`
 * in a process of its own), against rp2040js's own GDB server in this thread (the issue's baseline)
 * and the lab path's floors: a sim pico's GDB stream in a process of its own behind two plain TCP
 * proxies here (the CLI and the server as pipes), served by that process's main thread (the worker's
 * bridge today) or by the engine's own thread (decision 0740's port); and the same device's stream
 * behind a plain TCP forward in this process, for GDB's walk to `main`. All alternately (ABAB).
 */
export async function runDebugRemoteBench(): Promise<BenchRow[]> {
  const board = loadBoardCatalog().find((b) => b.id === 'pico')!;
  const device = await new SimBackend({ clock: systemClock }).open(board);
  await device.flash(loadFirmwareImage(readFileSync(elf)));
  const direct = await forwardedServer(device.debug!);
  // The lab path's floors (decision 0910): the stream in a process of its own (where the worker
  // would be) behind two proxies here that only pipe bytes (where the CLI and the server are).
  const floorMain = await startServedDevice('main', elf);
  const floorThread = await startServedDevice('thread', elf);
  const proxies = [await plainProxy(floorMain.port), await plainProxy(floorThread.port)];
  proxies.push(await plainProxy(proxies[0]!.port), await plainProxy(proxies[1]!.port));
  const piped = { main: proxies[2]!.port, thread: proxies[3]!.port };
  // The same hops as WebSocket pipes with nothing of hilbench in them (decision 0910): the CLI's
  // TCP-to-WebSocket and the server's WebSocket relay here, the worker's WebSocket server there.
  const floorWebSocket = await startServedDevice('websocket', elf);
  const wsPipes = [await webSocketToWebSocket(floorWebSocket.port)];
  wsPipes.push(await tcpToWebSocket(wsPipes[0]!.port));
  // The baseline: rp2040js's own GDBServer on its own Simulator in this thread (perf/debug.bench.ts's).
  const own = await rp2040jsOwnServer(elf, new OwnBootrom());
  const toMainOn = (port: number) => walkToMain('gdb-multiarch', elf, port, root);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hilbench-perf-debug-'));
  const quiet = { ...consoleLogger, info: () => undefined, warn: () => undefined };
  const server = await startBenchServer({ port: 0, dataDir, publicBaseUrl: 'http://bench.perf', boards: loadBoardCatalog(), localWorker: false, adminToken: ADMIN, logger: quiet });
  const created = await fetch(`${server.url}/admin/workers`, { method: 'POST', headers: { 'x-admin-token': ADMIN }, body: new URLSearchParams({ label: 'perf-debug' }) });
  const { token: workerToken } = (await created.json()) as { token: string };
  const worker = await startLabWorker(server.url, workerToken);
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
  const reads = { remote: [] as number[], own: [] as number[], main: [] as number[], thread: [] as number[], websocket: [] as number[] };
  const toMain = { direct: [] as number[], remote: [] as number[] };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      reads.own.push(...(await timeRegisterReads(own.port, READS_PER_ROUND)));
      reads.remote.push(...(await viaServer((port) => timeRegisterReads(port, READS_PER_ROUND))));
      reads.own.push(...(await timeRegisterReads(own.port, READS_PER_ROUND)));
      reads.main.push(...(await timeRegisterReads(piped.main, READS_PER_ROUND)));
      reads.own.push(...(await timeRegisterReads(own.port, READS_PER_ROUND)));
      reads.thread.push(...(await timeRegisterReads(piped.thread, READS_PER_ROUND)));
      reads.own.push(...(await timeRegisterReads(own.port, READS_PER_ROUND)));
      reads.websocket.push(...(await timeRegisterReads(wsPipes[1]!.port, READS_PER_ROUND)));
      toMain.direct.push(await toMainOn(direct.port));
      await direct.settled();
      toMain.remote.push(await viaServer(toMainOn));
    }
  } finally {
    await worker.close();
    await server.close();
    for (const proxy of proxies.reverse()) await proxy.close();
    await floorMain.close();
    await floorThread.close();
    for (const pipe of wsPipes.reverse()) await pipe.close();
    await floorWebSocket.close();
    await direct.close();
    await own.close();
    await device.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  const p50 = (samples: number[]) => percentile(samples, 50);
  return [
    { name: 'sim pico: register read (g) through hilbench debug --server and a remote worker in a process of its own, p50', value: p50(reads.remote) * 1000, unit: 'µs', note: `${reads.remote.length} reads in ${ROUNDS} rounds, alternating with the rows below; the lab server in this process, hilbench worker in its own` },
    { name: "sim pico: register read (g) on rp2040js's GDBServer in this thread, p50", value: p50(reads.own) * 1000, unit: 'µs', note: "the issue's baseline: the engine's own GDB server, nothing of hilbench in between; measured before each of the other reads' rounds" },
    { name: "sim pico: register read, through a server and worker / rp2040js's own server", value: p50(reads.remote) / p50(reads.own), unit: '×', note: 'issue 32 goal: at most 3' },
    { name: "sim pico: register read (g) on a device's stream in a process of its own (its main thread) behind two plain TCP proxies here, p50", value: p50(reads.main) * 1000, unit: 'µs', note: "the lab path's hops as pipes: the CLI and the server here, the worker's bridge in its main thread there (decision 0910)" },
    { name: 'sim pico: register read, through a server and worker / the main-thread floor', value: p50(reads.remote) / p50(reads.main), unit: '×', note: "what is hilbench's own on the remote path beyond pipes" },
    { name: 'sim pico: register read (g) on the same through WebSocket pipes (a TCP-to-WebSocket pipe and a WebSocket relay here, a WebSocket server there), p50', value: p50(reads.websocket) * 1000, unit: 'µs', note: "decision 0625's hops with nothing of hilbench in them: what the WebSocket messages cost (decision 0910)" },
    { name: 'sim pico: the WebSocket pipes / the main-thread floor', value: p50(reads.websocket) / p50(reads.main), unit: '×', note: 'the same hops, messages against raw bytes' },
    { name: "sim pico: register read (g) on the same, the stream served by the engine's thread in that process, p50", value: p50(reads.thread) * 1000, unit: 'µs', note: "the floor when the engine's thread takes the relayed stream itself (decisions 0740, 0850, 0910)" },
    { name: "sim pico: the engine-thread floor / rp2040js's own server", value: p50(reads.thread) / p50(reads.own), unit: '×', note: 'the least a remote read can cost against the goal of 3 with these hops on this machine' },
    { name: 'sim pico: gdb-multiarch: from target remote to halted at main (break main, continue), through a server and worker, p50', value: p50(toMain.remote), unit: 'ms', note: `timed by GDB's own clock, its start-up excluded; ${ROUNDS} runs` },
    { name: "sim pico: the same on the device's stream behind a plain TCP forward in this process, p50", value: p50(toMain.direct), unit: 'ms', note: 'alternately with the row above' },
  ];
}

// `npx tsx perf/debug-remote.bench.ts` measures this section alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  for (const row of await runDebugRemoteBench()) console.log(`${row.name}: ${row.value.toFixed(2)} ${row.unit}`);
}
