import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import type { Backend } from '../backends/backend.js';
import { loadFirmwareImage } from '../backends/image-check.js';
import { QemuBackend } from '../backends/qemu/qemu-backend.js';
import { SimBackend } from '../backends/sim/sim-backend.js';
import { loadBoardCatalog } from '../boards/catalog.js';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { systemClock } from '../core/clock.js';
import { RemoteWorker } from '../harness/worker/remote-worker.js';
import { forwardedServer } from './gdb-measure.js';
import { webSocketToTcp } from './websocket-pipes.js';

/**
 * The processes of the remote GDB bench's lab (perf/debug-remote.bench.ts, decisions 0910, 1000): a
 * `hilbench worker` of its own, as in a lab, and the floors' devices in processes of their own (a
 * board whose GDB stream is served on a TCP port by the worker-like process's main thread, or by
 * a sim engine's own thread), so every row pays the wake-up of a process the worker would be.
 */

const root = path.resolve(import.meta.dirname, '..');
/** The most host ms a child may take to say it is ready (tsx compiles the sources on the first start). */
const READY_MS = 120_000;

/** The board a lab process serves, and the backend that runs it (a sim, or QEMU). */
export interface LabBoard {
  boardId: string;
  choice: 'sim' | 'qemu';
}

/** The backend `choice` names, on the system clock (GDB runs in real time). */
export function labBackend(choice: LabBoard['choice']): Backend {
  return choice === 'qemu' ? new QemuBackend({ clock: systemClock }) : new SimBackend({ clock: systemClock });
}

export interface LabProcess {
  /** The TCP port a served device listens on (0 for the worker). */
  port: number;
  close(): Promise<void>;
}

/** Starts `node --import tsx <args>` and resolves once its stdout matches `ready`; rejects with its stderr's tail when it exits first or takes longer than `READY_MS`. */
function startChild(args: string[], ready: RegExp): Promise<{ child: ChildProcess & { stopping?: boolean }; match: RegExpExecArray }> {
  const child: ChildProcess & { stopping?: boolean } = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(`not ready within ${READY_MS} ms`), READY_MS);
    const fail = (why: string) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${args.join(' ')}: ${why}; stdout ${JSON.stringify(out.slice(-2000))}, stderr ${JSON.stringify(err.slice(-2000))}`));
    };
    child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-8000)));
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const match = ready.exec(out);
      if (!match) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      // A lab process that dies mid-run is said at once, with its last words, rather than left for a wait to find.
      child.once('exit', (code, signal) => !child.stopping && console.error(`${args.join(' ')} exited with ${code ?? signal}; stderr ${err.slice(-4000)}`));
      resolve({ child, match });
    });
    child.once('exit', (code) => fail(`exited with ${code}`));
  });
}

/** Ends `child` by closing its stdin (its cue to exit) and waits for its exit. */
async function stopChild(child: ChildProcess & { stopping?: boolean }): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.stopping = true;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.stdin!.end();
  await exited;
}

/** A remote worker (the library entry `hilbench worker` runs) for `serverUrl` in a process of its own, serving `lab`'s board; resolves once it has registered. */
export async function startLabWorker(serverUrl: string, token: string, lab: LabBoard): Promise<LabProcess> {
  const { child } = await startChild([path.join(import.meta.dirname, 'debug-lab-processes.ts'), 'worker', lab.boardId, lab.choice, serverUrl, token], /^READY (\d+)$/m);
  return { port: 0, close: () => stopChild(child) };
}

/**
 * `lab`'s board flashed with `elf` in a process of its own, its GDB stream on a TCP port: behind a
 * plain forward in that process's main thread (`main`), the same behind a WebSocket server there
 * (`websocket`: the port takes WebSockets whose binary messages are the bytes), or served by a sim
 * engine's thread (`thread`, decision 0740; a sim only).
 */
export async function startServedDevice(where: 'main' | 'websocket' | 'thread', elf: string, lab: LabBoard): Promise<LabProcess> {
  const { child, match } = await startChild([path.join(import.meta.dirname, 'debug-lab-processes.ts'), where, lab.boardId, lab.choice, elf], /^READY (\d+)$/m);
  return { port: Number(match[1]), close: () => stopChild(child) };
}

/** A lab process (`<role> <board> <sim|qemu> ...`): a remote worker (`worker`) or a served device (`main`, `websocket`, `thread`); prints `READY <port>` and runs until its stdin closes. */
async function labProcess([role, boardId, choiceText, ...args]: string[]): Promise<void> {
  const board = loadBoardCatalog().find((b) => b.id === boardId);
  if (!board) throw new Error(`no board ${boardId} in the catalog`);
  const choice = choiceText === 'qemu' ? 'qemu' : 'sim';
  // The process is the only holder of what it opened: its exit frees it all (an emulator it
  // started dies with it: backends/process/emulator-process.ts).
  process.stdin.on('end', () => process.exit(0)).resume();
  if (role === 'worker') {
    const worker = new RemoteWorker({
      serverUrl: args[0]!, token: args[1]!, clock: systemClock, boards: [board], backends: { [choice]: labBackend(choice) }, choice,
      firmwareCacheDir: mkdtempSync(path.join(tmpdir(), 'hilbench-perf-lab-cache-')), logInfo: () => undefined, logError: (message) => console.error(message),
    });
    await worker.start();
    console.log('READY 0');
    return;
  }
  const device = await labBackend(choice).open(board);
  await device.flash(loadFirmwareImage(readFileSync(args[0]!)));
  const quiet = { connected() {}, refused() {}, protocolError() {}, attachFailed() {}, disconnected() {} };
  if (role === 'thread') {
    console.log(`READY ${(await device.debug!.serve!({ port: 0, host: '127.0.0.1', maxPacketBytes: 65_536, events: quiet })).port}`);
    return;
  }
  const forwarded = await forwardedServer(device.debug!);
  console.log(`READY ${role === 'websocket' ? (await webSocketToTcp(forwarded.port)).port : forwarded.port}`);
}

if (import.meta.url === `file://${process.argv[1]}`) await labProcess(process.argv.slice(2));
