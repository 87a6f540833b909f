import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { execa } from 'execa';
import type { Backend, DeviceDebug } from '../backends/backend.js';
import { loadFirmwareImage } from '../backends/image-check.js';
import { QemuBackend } from '../backends/qemu/qemu-backend.js';
import { SimBackend } from '../backends/sim/sim-backend.js';
import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { rspPacket } from '../core/gdb/rsp-packet.js';
import { GdbBridge } from '../harness/debug/gdb-bridge.js';
import { OwnBootrom } from '../sim/rp2040/own-bootrom.js';
import { avrStubInThread, type OwnGdbServer, qemuOwnGdbstub, rp2040jsOwnServer } from './debug-own-servers.js';
import { type BenchRow, nowMs, percentile } from './measure.js';

const root = path.resolve(import.meta.dirname, '..');
const ROUNDS = 4;
const READS_PER_ROUND = 200;

/** A plain TCP forward to a freshly attached stream: the engine's own GDB server with no hilbench framing in between. */
async function directServer(debug: DeviceDebug): Promise<{ port: number; settled: () => Promise<unknown>; close: () => Promise<void> }> {
  let streamClosed: Promise<unknown> = Promise.resolve();
  const server = net.createServer((socket) => {
    // As the bridge does: without it Nagle's algorithm and delayed ACKs add ~40 ms to each reply.
    socket.setNoDelay(true);
    socket.on('error', () => undefined);
    streamClosed = debug.attach().then((stream) => {
      stream.onData((text) => socket.write(Buffer.from(text, 'latin1')));
      socket.on('data', (data: Buffer) => stream.write(data.toString('latin1')));
      // A kill ends the stream first; the debugger is then told by the connection's end.
      void stream.closed.then(() => socket.end());
      socket.once('close', () => void stream.close());
      return stream.closed;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  return { port: address.port, settled: () => streamClosed, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** Connects, waits for the target's answer to `?`, then times `count` register reads (`g`), one at a time; per-read host ms. */
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

/** Runs `fn` against a freshly started server, then closes it. */
async function withServer<T>(start: () => Promise<OwnGdbServer>, fn: (port: number) => Promise<T>): Promise<T> {
  const server = await start();
  try {
    return await fn(server.port);
  } finally {
    await server.close();
  }
}

/** One backend's rows: `own` starts its engine's own GDB server (the baseline), named `ownName`. */
interface DebugCase {
  label: string;
  backend: Backend;
  boardId: string;
  gdb: string;
  ownName: string;
  own: (elf: string) => Promise<OwnGdbServer>;
}

async function debugRows({ label, backend, boardId, gdb, ownName, own }: DebugCase): Promise<BenchRow[]> {
  const board = loadBoardCatalog().find((b) => b.id === boardId)!;
  const elf = path.join(root, 'scenarios/debug-firmware', `${boardId}.elf`);
  const device = await backend.open(board);
  await device.flash(loadFirmwareImage(readFileSync(elf)));
  const debug = device.debug!;
  const direct = await directServer(debug);
  /** Runs `fn` against a fresh bridge (each debugger's session is its own), then stops it. */
  const viaBridge = async <T>(fn: (port: number) => Promise<T>): Promise<T> => {
    const bridge = await GdbBridge.start({ debug, boardId, clock: systemClock, port: 0, idleTimeoutMs: 600_000, log: () => undefined });
    try {
      return await fn(bridge.port);
    } finally {
      await bridge.stop();
    }
  };
  /** GDB's own clock (its Python) from `target remote` to halted at main: GDB's start-up and the ELF's load are outside it. */
  const walkToMain = async (port: number) => {
    const result = await execa(
      gdb,
      ['-nx', '--batch', '-ex', `file ${elf}`, '-ex', 'python import time; hb_t0 = time.monotonic()', '-ex', `target remote localhost:${port}`, '-ex', 'break main', '-ex', 'continue',
        '-ex', 'python print("hilbench-to-main-ms %.3f" % ((time.monotonic() - hb_t0) * 1000))', '-ex', 'kill'],
      { reject: false, cwd: root },
    );
    const ms = /hilbench-to-main-ms ([\d.]+)/.exec(result.stdout);
    if (!/Breakpoint 1, main/.test(result.stdout) || !ms) throw new Error(`${gdb} did not stop at main: ${result.stdout} ${result.stderr}`);
    return Number(ms[1]);
  };
  const reads = { own: [] as number[], forwarded: [] as number[], bridged: [] as number[] };
  const toMain = { own: [] as number[], bridged: [] as number[] };
  try {
    // ABCABC: the engine's own server, the device's stream behind a plain forward, and the same
    // stream behind hilbench's bridge, alternately.
    for (let round = 0; round < ROUNDS; round++) {
      reads.own.push(...(await withServer(() => own(elf), (port) => timeRegisterReads(port, READS_PER_ROUND))));
      reads.forwarded.push(...(await timeRegisterReads(direct.port, READS_PER_ROUND)));
      await direct.settled();
      reads.bridged.push(...(await viaBridge((port) => timeRegisterReads(port, READS_PER_ROUND))));
      toMain.own.push(await withServer(() => own(elf), walkToMain));
      toMain.bridged.push(await viaBridge(walkToMain));
    }
  } finally {
    await direct.close();
    await device.close();
  }
  const p50 = (samples: number[]) => percentile(samples, 50);
  return [
    { name: `${label}: register read (g) through hilbench debug, p50`, value: p50(reads.bridged) * 1000, unit: 'µs', note: `${reads.bridged.length} reads in ${ROUNDS} rounds, alternating with the two rows below` },
    { name: `${label}: register read (g) on ${ownName}, p50`, value: p50(reads.own) * 1000, unit: 'µs', note: 'the baseline: the engine\'s own GDB server, nothing of hilbench in between' },
    { name: `${label}: register read, hilbench debug / own server`, value: p50(reads.bridged) / p50(reads.own), unit: '×', note: 'issue 32 goal: at most 1.5 locally' },
    { name: `${label}: register read (g) on the device's stream behind a plain TCP forward, p50`, value: p50(reads.forwarded) * 1000, unit: 'µs', note: 'hilbench debug without its bridge (no framing checks): what the bridge itself costs' },
    { name: `${label}: ${gdb}: from target remote to halted at main (break main, continue), through hilbench debug, p50`, value: p50(toMain.bridged), unit: 'ms', note: `timed by GDB's own clock, its start-up excluded; ${ROUNDS} runs` },
    { name: `${label}: the same on ${ownName}, p50`, value: p50(toMain.own), unit: 'ms', note: 'alternately with the row above; the server started before GDB' },
  ];
}

/** `npm run bench` section: GDB through `hilbench debug` against the engines' own GDB servers (issue 32). */
export async function runDebugBench(): Promise<BenchRow[]> {
  const boards = loadBoardCatalog();
  const board = (id: string) => boards.find((b) => b.id === id)!;
  const rom = new OwnBootrom();
  const sim = () => new SimBackend({ clock: systemClock });
  const cases: DebugCase[] = [
    { label: 'sim pico', backend: sim(), boardId: 'pico', gdb: 'gdb-multiarch', ownName: "rp2040js's GDBServer in this thread", own: (elf) => rp2040jsOwnServer(elf, rom) },
    { label: 'sim uno', backend: sim(), boardId: 'uno', gdb: 'avr-gdb', ownName: "hilbench's avr8js stub in this thread", own: (elf) => avrStubInThread(board('uno'), elf) },
    { label: 'QEMU mps2-an385', backend: new QemuBackend({ clock: systemClock }), boardId: 'mps2-an385', gdb: 'gdb-multiarch', ownName: "QEMU's gdbstub (-S -gdb tcp)", own: (elf) => qemuOwnGdbstub(board('mps2-an385'), elf) },
  ];
  const rows: BenchRow[] = [];
  for (const c of cases) rows.push(...(await debugRows(c)));
  return rows;
}
