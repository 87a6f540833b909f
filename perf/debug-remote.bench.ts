import path from 'node:path';
import { loadBoardCatalog } from '../boards/catalog.js';
import { OwnBootrom } from '../sim/rp2040/own-bootrom.js';
import { startDebugLab } from './debug-lab.js';
import { type LabBoard, type LabProcess, startServedDevice } from './debug-lab-processes.js';
import { avrStubInThread, type OwnGdbServer, qemuOwnGdbstub, rp2040jsOwnServer } from './debug-own-servers.js';
import { plainProxy, timeRegisterReads, walkToMain } from './gdb-measure.js';
import { tcpToWebSocket, webSocketToWebSocket } from './websocket-pipes.js';
import { type BenchRow, percentile } from './measure.js';

const root = path.resolve(import.meta.dirname, '..');
const ROUNDS = 5;
const READS_PER_ROUND = 100;

/** One backend's remote rows (decision 1000): its lab board, its GDB, and its engine's own GDB server (the baseline). */
interface RemoteCase {
  label: string;
  lab: LabBoard;
  gdb: string;
  ownName: string;
  own: (elf: string) => Promise<OwnGdbServer>;
  /** QEMU's gdbstub serves one debugger a process: a fresh one for each block of reads (its start is outside the timing). */
  ownPerBlock: boolean;
  /** A sim: the floor with the stream served by the engine's own thread (decision 0740), which dials the worker's legs itself (0970). */
  engineThreadFloor: boolean;
  /** The same hops as WebSocket pipes (decision 0910's comparison with the transport it replaced); pico only. */
  webSocketFloor: boolean;
}

type Floor = 'main' | 'thread' | 'websocket';

const p50 = (samples: readonly number[]) => percentile(samples, 50);
const median = (values: readonly number[]) => percentile(values, 50);

/**
 * `npm run bench` section (issue 32, decisions 0625, 0812, 0910, 1000): per backend, GDB through
 * `hilbench debug --server` to a board on a remote worker, as a lab runs it (a lab server in this
 * process, `hilbench worker` in a process of its own), against the engine's own GDB server (the
 * issue's baseline, read before each other block of reads) and the lab path's floors: the board's
 * GDB stream in a process of its own behind two plain TCP proxies here (the CLI and the server as
 * pipes), served by that process's main thread (where the worker's bridge is) or, for a sim, by the
 * engine's own thread; for pico also the same hops as WebSocket pipes; then GDB's walk to `main`
 * through the server and on the engine's own server. All alternately (ABAB); each ratio is the
 * median of the rounds' ratios.
 */
export async function runDebugRemoteBench(): Promise<BenchRow[]> {
  const boards = loadBoardCatalog();
  const board = (id: string) => boards.find((b) => b.id === id)!;
  const rom = new OwnBootrom();
  const cases: RemoteCase[] = [
    { label: 'sim pico', lab: { boardId: 'pico', choice: 'sim' }, gdb: 'gdb-multiarch', ownName: "rp2040js's GDBServer in this thread", own: (elf) => rp2040jsOwnServer(elf, rom), ownPerBlock: false, engineThreadFloor: true, webSocketFloor: true },
    { label: 'sim uno', lab: { boardId: 'uno', choice: 'sim' }, gdb: 'avr-gdb', ownName: "hilbench's avr8js stub in this thread", own: (elf) => avrStubInThread(board('uno'), elf), ownPerBlock: false, engineThreadFloor: true, webSocketFloor: false },
    { label: 'QEMU mps2-an385', lab: { boardId: 'mps2-an385', choice: 'qemu' }, gdb: 'gdb-multiarch', ownName: "QEMU's gdbstub (-S -gdb tcp)", own: (elf) => qemuOwnGdbstub(board('mps2-an385'), elf), ownPerBlock: true, engineThreadFloor: false, webSocketFloor: false },
  ];
  const rows: BenchRow[] = [];
  for (const c of cases) rows.push(...(await remoteRows(c)));
  return rows;
}

/** The started parts of a case, closed in reverse order whatever happens. */
class Parts {
  private readonly closers: Array<() => Promise<void>> = [];
  async add<T extends { close(): Promise<void> }>(started: Promise<T>): Promise<T> {
    const part = await started;
    this.closers.push(() => part.close());
    return part;
  }
  async close(): Promise<void> {
    for (const close of this.closers.reverse()) await close();
  }
}

/** The lab path's floors of a case: each a served board in a process of its own behind pipes here; the port to read on. */
async function startFloors(c: RemoteCase, elf: string, parts: Parts): Promise<Partial<Record<Floor, number>>> {
  const behindTwoProxies = async (served: LabProcess) => (await parts.add(plainProxy((await parts.add(plainProxy(served.port))).port))).port;
  const floors: Partial<Record<Floor, number>> = { main: await behindTwoProxies(await parts.add(startServedDevice('main', elf, c.lab))) };
  if (c.engineThreadFloor) floors.thread = await behindTwoProxies(await parts.add(startServedDevice('thread', elf, c.lab)));
  if (c.webSocketFloor) {
    // The same hops as WebSocket pipes with nothing of hilbench in them (decision 0910): the CLI's
    // TCP-to-WebSocket and the server's WebSocket relay here, the worker's WebSocket server there.
    const served = await parts.add(startServedDevice('websocket', elf, c.lab));
    floors.websocket = (await parts.add(tcpToWebSocket((await parts.add(webSocketToWebSocket(served.port))).port))).port;
  }
  return floors;
}

async function remoteRows(c: RemoteCase): Promise<BenchRow[]> {
  const elf = path.join(root, 'firmware/debug', `${c.lab.boardId}.elf`);
  const parts = new Parts();
  const reads = { remote: [] as number[], own: [] as number[], main: [] as number[], thread: [] as number[], websocket: [] as number[] };
  /** Per round: each block's p50 over the own server's block read just before it, and the remote block's over each floor's. */
  const ratios = { remote: [] as number[], main: [] as number[], thread: [] as number[], remoteOverMain: [] as number[], websocketOverMain: [] as number[] };
  const toMain = { own: [] as number[], remote: [] as number[] };
  try {
    const floors = await startFloors(c, elf, parts);
    const lab = await parts.add(startDebugLab(c.lab, elf));
    const ownServer = c.ownPerBlock ? undefined : await parts.add(c.own(elf));
    /** `fn` on the own server: the one started for the case, or one started for `fn` alone (served before `fn` begins). */
    const onOwn = async <T>(fn: (port: number) => Promise<T>): Promise<T> => {
      if (ownServer) return fn(ownServer.port);
      const fresh = await c.own(elf);
      try {
        return await fn(fresh.port);
      } finally {
        await fresh.close();
      }
    };
    const ownBlock = () => onOwn((port) => timeRegisterReads(port, READS_PER_ROUND));
    /** The own server's block, then `block`'s: both kept, and their ratio. */
    const afterOwn = async (name: 'remote' | Floor, block: () => Promise<number[]>): Promise<number> => {
      const own = await ownBlock();
      const samples = await block();
      reads.own.push(...own);
      reads[name].push(...samples);
      if (name !== 'websocket') ratios[name].push(p50(samples) / p50(own));
      return p50(samples);
    };
    const toMainOn = (port: number) => walkToMain(c.gdb, elf, port, root);
    for (let round = 0; round < ROUNDS; round++) {
      const remote = await afterOwn('remote', () => lab.viaServer((port) => timeRegisterReads(port, READS_PER_ROUND)));
      const main = await afterOwn('main', () => timeRegisterReads(floors.main!, READS_PER_ROUND));
      ratios.remoteOverMain.push(remote / main);
      if (floors.thread) await afterOwn('thread', () => timeRegisterReads(floors.thread!, READS_PER_ROUND));
      if (floors.websocket) ratios.websocketOverMain.push((await afterOwn('websocket', () => timeRegisterReads(floors.websocket!, READS_PER_ROUND))) / main);
      toMain.own.push(await onOwn(toMainOn));
      toMain.remote.push(await lab.viaServer(toMainOn));
    }
  } finally {
    await parts.close();
  }
  const { label, ownName } = c;
  const perRound = `the median of the ${ROUNDS} rounds' ratios`;
  const rows: BenchRow[] = [
    { name: `${label}: register read (g) through hilbench debug --server and a remote worker in a process of its own, p50`, value: p50(reads.remote) * 1000, unit: 'µs', note: `${reads.remote.length} reads in ${ROUNDS} rounds, alternating with the rows below; the lab server in this process, hilbench worker in its own` },
    { name: `${label}: register read (g) on ${ownName}, p50`, value: p50(reads.own) * 1000, unit: 'µs', note: "the issue's baseline: the engine's own GDB server, nothing of hilbench in between; a block read before each of the other rows' blocks" },
    { name: `${label}: register read, through a server and worker / own server`, value: median(ratios.remote), unit: '×', note: `issue 32 goal: at most 3; ${perRound}, each block against the own server's block just before it` },
    { name: `${label}: register read (g) on the board's stream in a process of its own (its main thread) behind two plain TCP proxies here, p50`, value: p50(reads.main) * 1000, unit: 'µs', note: "the lab path's hops as pipes: the CLI and the server here, the worker's bridge in its main thread there (decision 0910)" },
    { name: `${label}: register read, through a server and worker / the main-thread floor`, value: median(ratios.remoteOverMain), unit: '×', note: `what is hilbench's own on the remote path beyond pipes; ${perRound}` },
    { name: `${label}: the main-thread floor / own server`, value: median(ratios.main), unit: '×', note: `what the lab's hops cost as bare pipes against the goal of 3; ${perRound}` },
  ];
  if (c.webSocketFloor) {
    rows.push(
      { name: `${label}: register read (g) on the same through WebSocket pipes (a TCP-to-WebSocket pipe and a WebSocket relay here, a WebSocket server there), p50`, value: p50(reads.websocket) * 1000, unit: 'µs', note: "decision 0625's hops with nothing of hilbench in them: what the WebSocket messages cost (decision 0910)" },
      { name: `${label}: the WebSocket pipes / the main-thread floor`, value: median(ratios.websocketOverMain), unit: '×', note: `the same hops, messages against raw bytes; ${perRound}` },
    );
  }
  if (c.engineThreadFloor) {
    rows.push(
      { name: `${label}: register read (g) on the same, the stream served by the engine's thread in that process, p50`, value: p50(reads.thread) * 1000, unit: 'µs', note: "the floor when the engine's thread takes the relayed stream itself, as hilbench's path does (decisions 0740, 0970)" },
      { name: `${label}: the engine-thread floor / own server`, value: median(ratios.thread), unit: '×', note: `the least a remote read can cost against the goal of 3 with these hops on this machine; ${perRound}` },
    );
  }
  rows.push(
    { name: `${label}: ${c.gdb}: from target remote to halted at main (break main, continue), through a server and worker, p50`, value: p50(toMain.remote), unit: 'ms', note: `timed by GDB's own clock, its start-up excluded; ${ROUNDS} runs` },
    { name: `${label}: the same on ${ownName}, p50`, value: p50(toMain.own), unit: 'ms', note: 'alternately with the row above; the server started before GDB, as the worker has the core halted at reset before the CLI offers its port' },
  );
  return rows;
}

// `npx tsx perf/debug-remote.bench.ts` measures this section alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  for (const row of await runDebugRemoteBench()) console.log(`${row.name}: ${row.value.toFixed(2)} ${row.unit}`);
}
