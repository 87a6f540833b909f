import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Worker } from 'node:worker_threads';
import { ConsoleLogger, LogLevel, Simulator } from 'rp2040js';
import { loadableSegments, parseElf } from '../core/elf.js';
import type { OwnBootrom } from '../sim/rp2040/own-bootrom.js';
import type { RomMachine } from '../sim/rp2040/rom-functions.js';
import { romMachineFor } from '../sim/rp2040/rom-machine.js';

/**
 * The baseline of the RP2040 benchmarks (rom-loop, multicore): raw rp2040js, as its users drive
 * it, running the same image as the sim backend, and what keeps the two measured alike.
 */

const FLASH_START = 0x1000_0000;
/** Where boot2 leaves the core: the image's vector table after the 256-byte boot2 stage. */
const BOOT2_VECTOR_TABLE = 0x1000_0100;
const ROM_END = 0x4000;

/** Event-loop turns given before each timed run, after the collection, for the tasks it queued. */
const SETTLE_TURNS = 3;
v8.setFlagsFromString('--expose-gc');
/** V8's full collection, reachable without starting Node with --expose-gc. */
const collectGarbage = runInNewContext('gc') as () => void;

/**
 * Collects the main thread's garbage and lets its event loop run what is queued before a timed
 * run. The chips live in worker threads (the engine's, `RawRp2040jsThread`), but the main
 * thread still carries the sim side's messages and UART batches; collected here, that garbage
 * lands in neither side's timed run (decision 0525; without it the sim side measured 0.54 of raw
 * on `compute` where it measured 0.64–0.87 with it, decision 0571).
 */
export async function settle(): Promise<void> {
  collectGarbage();
  for (let i = 0; i < SETTLE_TURNS; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** A raw rp2040js chip with an image loaded, ready for `rawRp2040jsRun`. */
export interface RawChip {
  sim: Simulator;
  machine: RomMachine;
  stopped: boolean;
}

/**
 * An SDK-style image (a boot2 stage) on raw rp2040js: its `Simulator` chip and clock, the
 * project's ROM image mapped, and the core where boot2 leaves it. Built apart from the timed
 * loop, as the engine is (flash and reset). Memory and the ROM's registers reach the ROM's
 * functions through the engine's `romMachineFor`: the same marshalling on both sides.
 */
export function rawRp2040jsChip(bytes: Uint8Array, rom: OwnBootrom): RawChip {
  const sim = new Simulator();
  const { rp2040: chip } = sim;
  chip.logger = new ConsoleLogger(LogLevel.Error);
  chip.loadBootrom(rom.words);
  for (const seg of loadableSegments(parseElf(bytes))) chip.flash.set(bytes.subarray(seg.offset, seg.offset + seg.fileSizeBytes), seg.paddr - FLASH_START);
  const { core } = chip;
  core.VTOR = BOOT2_VECTOR_TABLE;
  core.SP = chip.readUint32(BOOT2_VECTOR_TABLE);
  core.PC = chip.readUint32(BOOT2_VECTOR_TABLE + 4) & ~1;
  const machine = romMachineFor(chip, core);
  const raw: RawChip = { sim, machine, stopped: false };
  chip.onBreak = () => (raw.stopped = true);
  return raw;
}

/**
 * One run on raw rp2040js: the bare loop every rp2040js user writes (execute, tick). The ROM's
 * functions are dispatched to the same TypeScript entries the engine uses, or the image could
 * not run at all; nothing else of hilbench is in the loop (no slices, UART buffer,
 * unmodelled-access hooks). Returns the instructions executed (a ROM call counts as one, as in
 * the engine) and the simulated time at the exit.
 */
export function rawRp2040jsRun(raw: RawChip, rom: OwnBootrom): { instructions: number; simulatedNanos: number } {
  const { clock, rp2040: chip } = raw.sim;
  const { core } = chip;
  const { machine } = raw;
  let instructions = 0;
  // The cycle time follows clk_sys as the firmware sets it, as in the engine (rp2040js's own Simulator assumes 125 MHz).
  let cycleNanos = 1e9 / chip.clkSys;
  chip.addClockListener((clkSys) => (cycleNanos = 1e9 / clkSys));
  while (!raw.stopped) {
    instructions++;
    if (core.PC < ROM_END) {
      const outcome = rom.entryAt(core.PC)!.run(machine);
      if (outcome !== undefined) throw new Error(`the image took a ROM path the raw loop does not follow (${outcome.kind})`);
      core.BXWritePC(core.LR);
      continue;
    }
    clock.tick(core.executeInstruction() * cycleNanos);
  }
  return { instructions, simulatedNanos: clock.nanos };
}

/** A request to the raw baseline's thread (perf/raw-rp2040js-thread.ts): build a chip with an image, or run the one built. */
export type RawThreadRequest = { kind: 'load'; bytes: Uint8Array } | { kind: 'run' };
export type RawThreadReply = { kind: 'loaded' } | { kind: 'ran'; instructions: number; simulatedNanos: number } | { kind: 'failed'; message: string };

const RAW_THREAD_ENTRY = new URL(`./raw-rp2040js-thread${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

/**
 * Raw rp2040js in a worker thread of its own, as the sim backend runs each engine (decision
 * 0520): each side then runs in an isolate where only it runs, collects its own garbage when V8
 * decides, and is reached by one message each way. In the main thread the baseline's optimised
 * code was thrown away at every `settle` (a full collection frees the last run's chip, which
 * that code referred to) and recompiled in the timed run, which the engine's thread never paid:
 * the baseline measured 5 M instructions a second against 17 M unsettled (decision 0571).
 */
export class RawRp2040jsThread {
  private readonly worker: Worker;

  private constructor() {
    // tsx's scoped importer for the TypeScript sources (Node 20 gives a worker no loader hooks), as SimThread does.
    const tsxApi = new URL('dist/esm/api/index.mjs', pathToFileURL(createRequire(import.meta.url).resolve('tsx/package.json'))).href;
    this.worker = RAW_THREAD_ENTRY.pathname.endsWith('.ts')
      ? new Worker(`import(${JSON.stringify(tsxApi)}).then((tsx) => tsx.tsImport(${JSON.stringify(RAW_THREAD_ENTRY.href)}, ${JSON.stringify(RAW_THREAD_ENTRY.href)}))`, { eval: true })
      : new Worker(RAW_THREAD_ENTRY);
  }

  static start(): RawRp2040jsThread {
    return new RawRp2040jsThread();
  }

  /** Builds a chip with `bytes` (a boot2 image) in the thread: flash, ROM, reset, before any timing. */
  async load(bytes: Uint8Array): Promise<void> {
    await this.request({ kind: 'load', bytes });
  }

  /** Runs the chip built last to its exit. */
  async run(): Promise<{ instructions: number; simulatedNanos: number }> {
    const reply = await this.request({ kind: 'run' });
    if (reply.kind !== 'ran') throw new Error(`raw rp2040js thread answered ${reply.kind} to run`);
    return reply;
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }

  private request(request: RawThreadRequest): Promise<RawThreadReply> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      this.worker.once('error', onError);
      this.worker.once('message', (reply: RawThreadReply) => {
        this.worker.off('error', onError);
        if (reply.kind === 'failed') reject(new Error(`raw rp2040js: ${reply.message}`));
        else resolve(reply);
      });
      this.worker.postMessage(request);
    });
  }
}
