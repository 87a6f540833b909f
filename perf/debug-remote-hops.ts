import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SimBackend } from '../backends/sim/sim-backend.js';
import { runRemoteDebugSession } from '../bin/debug-on-server.js';
import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { rspPacket } from '../core/gdb/rsp-packet.js';
import { RemoteWorker } from '../harness/worker/remote-worker.js';
import { startBenchServer } from '../server/bench/start-bench-server.js';
import { consoleLogger } from '../server/http/logger.js';

/**
 * Where the time of one GDB register read through `hilbench debug --server` goes (decision 0812):
 * every socket read and write of this process is timestamped while a read is in flight (a patch of
 * `net.Socket`'s `emit` and `write`, so nothing in the code under test changes), and the median
 * gap before each step of the usual sequence is printed with the socket it happened on: the
 * client, the CLI's port, the CLI's and the worker's upgraded connections to the server. A diagnostic, not a
 * benchmark section: `npx tsx perf/debug-remote-hops.ts [reads]` (default 300); on a quiet machine.
 */
interface SocketEvent {
  atNanos: bigint;
  kind: 'read' | 'write';
  localPort: number;
  remotePort: number;
  bytes: number;
}

let recording: SocketEvent[] | undefined;
const emit = net.Socket.prototype.emit;
net.Socket.prototype.emit = function (this: net.Socket, name: string | symbol, ...args: unknown[]): boolean {
  if (recording && name === 'data') recording.push({ atNanos: process.hrtime.bigint(), kind: 'read', localPort: this.localPort ?? 0, remotePort: this.remotePort ?? 0, bytes: (args[0] as Buffer).length });
  return Reflect.apply(emit, this, [name, ...args]) as boolean;
};
const write = net.Socket.prototype.write as (...args: unknown[]) => boolean;
net.Socket.prototype.write = function (this: net.Socket, ...args: unknown[]): boolean {
  if (recording) recording.push({ atNanos: process.hrtime.bigint(), kind: 'write', localPort: this.localPort ?? 0, remotePort: this.remotePort ?? 0, bytes: typeof args[0] === 'string' ? args[0].length : (args[0] as Uint8Array).length });
  return write.apply(this, args);
} as typeof net.Socket.prototype.write;

/** `count` register reads on 127.0.0.1:`port`, one at a time, each read's socket events. */
async function recordReads(port: number, count: number): Promise<SocketEvent[][]> {
  const socket = net.createConnection({ port, host: '127.0.0.1' });
  socket.setNoDelay(true);
  await new Promise((resolve) => socket.once('connect', resolve));
  let buffer = '';
  let check: (() => void) | undefined;
  socket.on('data', (data: Buffer) => {
    buffer += data.toString('latin1');
    check?.();
  });
  const reply = () =>
    new Promise<void>((resolve) => {
      check = () => {
        const end = /\$[^#]*#[0-9a-f]{2}/.exec(buffer);
        if (!end) return;
        buffer = buffer.slice(end.index + end[0].length);
        check = undefined;
        resolve();
      };
      check();
    });
  socket.write(rspPacket('?'));
  await reply();
  const reads: SocketEvent[][] = [];
  for (let i = 0; i < count; i++) {
    const events: SocketEvent[] = [];
    recording = events;
    socket.write(`+${rspPacket('g')}`);
    await reply();
    recording = undefined;
    reads.push(events);
  }
  socket.destroy();
  return reads;
}

/** The usual sequence of steps (the most frequent), and the median gap before each. */
function report(reads: SocketEvent[][], names: Map<number, string>): void {
  const shape = (events: SocketEvent[]) => events.map((e) => `${e.kind}@${e.localPort}`).join(' ');
  const byShape = new Map<string, SocketEvent[][]>();
  for (const events of reads) byShape.set(shape(events), [...(byShape.get(shape(events)) ?? []), events]);
  const usual = [...byShape.values()].sort((a, b) => b.length - a.length)[0]!;
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(`${usual.length} of ${reads.length} reads took the usual sequence of ${usual[0]!.length} socket events`);
  usual[0]!.forEach((event, i) => {
    const gapMicros = median(usual.map((events) => Number(events[i]!.atNanos - events[Math.max(0, i - 1)]!.atNanos) / 1000));
    const where = `${names.get(event.localPort) ?? `:${event.localPort}`} (to ${names.get(event.remotePort) ?? `:${event.remotePort}`})`;
    console.log(`  +${gapMicros.toFixed(0).padStart(4)} µs  ${event.kind.padEnd(5)} ${String(event.bytes).padStart(4)} B on ${where}`);
  });
  console.log(`  total p50 ${median(usual.map((events) => Number(events.at(-1)!.atNanos - events[0]!.atNanos) / 1000)).toFixed(0)} µs`);
}

const reads = Number(process.argv[2] ?? 300);
const board = loadBoardCatalog().find((b) => b.id === 'pico')!;
const dataDir = mkdtempSync(path.join(tmpdir(), 'hilbench-hops-'));
const cache = mkdtempSync(path.join(tmpdir(), 'hilbench-hops-cache-'));
const server = await startBenchServer({ port: 0, dataDir, publicBaseUrl: 'http://bench.hops', boards: loadBoardCatalog(), localWorker: false, adminToken: 'hops-admin', logger: { ...consoleLogger, info: () => undefined, warn: () => undefined } });
const created = await fetch(`${server.url}/admin/workers`, { method: 'POST', headers: { 'x-admin-token': 'hops-admin' }, body: new URLSearchParams({ label: 'hops' }) });
const worker = new RemoteWorker({
  serverUrl: server.url,
  token: ((await created.json()) as { token: string }).token,
  clock: systemClock,
  boards: [board],
  backends: { sim: new SimBackend({ clock: systemClock }) },
  choice: 'sim',
  firmwareCacheDir: cache,
  logInfo: () => undefined,
  logError: () => undefined,
});
await worker.start();
const registered = await fetch(`${server.url}/api/v1/agents/register`, { method: 'POST', body: new URLSearchParams({ label: 'hops' }) });
const interrupt = new AbortController();
let listening: (port: number) => void = () => undefined;
const cliPort = new Promise<number>((resolve) => (listening = resolve));
const session = runRemoteDebugSession({
  server: server.url,
  token: ((await registered.json()) as { token: string }).token,
  board: 'pico',
  firmware: readFileSync(path.resolve(import.meta.dirname, '../firmware/debug/pico.elf')),
  gdbPort: 0,
  idleTimeoutSeconds: 600,
  afterDetachSeconds: 1,
  onUart: () => undefined,
  log: () => undefined,
  onListening: (port) => listening(port),
  signal: interrupt.signal,
});
try {
  const port = await cliPort;
  report(await recordReads(port, reads), new Map([[port, "the CLI's GDB port"], [Number(new URL(server.url).port), 'the server']]));
} finally {
  interrupt.abort();
  await session;
  await worker.close();
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(cache, { recursive: true, force: true });
}
