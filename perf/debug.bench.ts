import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Backend } from '../backends/backend.js';
import { loadFirmwareImage } from '../backends/image-check.js';
import { QemuBackend } from '../backends/qemu/qemu-backend.js';
import { SimBackend } from '../backends/sim/sim-backend.js';
import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { GdbBridge } from '../harness/debug/gdb-bridge.js';
import { OwnBootrom } from '../sim/rp2040/own-bootrom.js';
import { avrStubInThread, type OwnGdbServer, qemuOwnGdbstub, rp2040jsOwnServer } from './debug-own-servers.js';
import { forwardedServer, plainProxy, RegisterReadClient, timeRegisterReads, walkToMain } from './gdb-measure.js';
import { type BenchRow, percentile } from './measure.js';

const root = path.resolve(import.meta.dirname, '..');
const ROUNDS = 4;
const READS_PER_ROUND = 200;

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

async function debugRows({ label, backend, boardId, gdb, ownName, own }: DebugCase, client: RegisterReadClient): Promise<BenchRow[]> {
  const board = loadBoardCatalog().find((b) => b.id === boardId)!;
  const elf = path.join(root, 'firmware/debug', `${boardId}.elf`);
  const device = await backend.open(board);
  await device.flash(loadFirmwareImage(readFileSync(elf)));
  const debug = device.debug!;
  const direct = await forwardedServer(debug);
  /**
   * Runs `fn` against a fresh bridge (each debugger's session is its own), then stops it. As
   * `hilbench debug` does, the stream is attached before the port is offered, so the first
   * debugger finds the core halted at reset: an attach (for QEMU a restart of the process) is
   * not part of `target remote`, as the baselines' start is not.
   */
  const viaBridge = async <T>(fn: (port: number) => Promise<T>): Promise<T> => {
    const bridge = await GdbBridge.start({ debug, attachFirst: true, boardId, clock: systemClock, port: 0, idleTimeoutMs: 600_000, log: () => undefined });
    try {
      return await fn(bridge.port);
    } finally {
      await bridge.stop();
    }
  };
  const toMainOn = (port: number) => walkToMain(gdb, elf, port, root);
  const reads = { own: [] as number[], forwarded: [] as number[], bridged: [] as number[] };
  /** The same reads from a client thread of its own, as GDB reads from a process of its own. */
  const apart = { own: [] as number[], bridged: [] as number[], proxied: [] as number[] };
  const readsHere = (port: number) => timeRegisterReads(port, READS_PER_ROUND);
  const readsApart = (port: number) => client.timeRegisterReads(port, READS_PER_ROUND);
  /** The engine's own server behind a proxy that only forwards: what any proxy costs (`plainProxy`). */
  const readsApartProxied = async (port: number) => {
    const proxy = await plainProxy(port);
    try {
      return await readsApart(proxy.port);
    } finally {
      await proxy.close();
    }
  };
  const toMain = { own: [] as number[], bridged: [] as number[] };
  try {
    // ABCABC: the engine's own server, the device's stream behind a plain forward, and the same
    // stream behind hilbench's bridge, alternately; each server afresh for the client apart (a
    // bridge takes one debugger at a time, and the last one's close may not have reached it yet).
    for (let round = 0; round < ROUNDS; round++) {
      reads.own.push(...(await withServer(() => own(elf), readsHere)));
      apart.own.push(...(await withServer(() => own(elf), readsApart)));
      apart.proxied.push(...(await withServer(() => own(elf), readsApartProxied)));
      reads.forwarded.push(...(await readsHere(direct.port)));
      await direct.settled();
      reads.bridged.push(...(await viaBridge(readsHere)));
      apart.bridged.push(...(await viaBridge(readsApart)));
      toMain.own.push(await withServer(() => own(elf), toMainOn));
      toMain.bridged.push(await viaBridge(toMainOn));
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
    { name: `${label}: register read (g) through hilbench debug, from a client thread of its own, p50`, value: p50(apart.bridged) * 1000, unit: 'µs', note: `${apart.bridged.length} reads in ${ROUNDS} rounds, alternating with the rows above; GDB is a process of its own, so its reads wake the serving thread as these do` },
    { name: `${label}: register read (g) on ${ownName}, from a client thread of its own, p50`, value: p50(apart.own) * 1000, unit: 'µs', note: 'the baseline, read as GDB reads it: from outside its thread' },
    { name: `${label}: register read from a client thread of its own, hilbench debug / own server`, value: p50(apart.bridged) / p50(apart.own), unit: '×', note: 'issue 32 goal: at most 1.5 locally' },
    { name: `${label}: register read (g) on ${ownName} behind a plain TCP proxy in this thread, from a client thread of its own, p50`, value: p50(apart.proxied) * 1000, unit: 'µs', note: 'alternately with the rows above; a proxy that only pipes bytes: the floor of any proxy, which hilbench debug must be to keep its bounds' },
    { name: `${label}: register read from a client thread of its own, plain TCP proxy / own server`, value: p50(apart.proxied) / p50(apart.own), unit: '×', note: 'what any proxy in this process adds (two more wake-ups of a thread per read): decision 0660' },
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
  const client = RegisterReadClient.start();
  try {
    for (const c of cases) rows.push(...(await debugRows(c, client)));
  } finally {
    await client.close();
  }
  return rows;
}
