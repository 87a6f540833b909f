import { readFileSync } from 'node:fs';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ConsoleLogger, LogLevel, Simulator } from 'rp2040js';
import { loadFirmwareImage } from '../backends/image-check.js';
import { SimBackend } from '../backends/sim/sim-backend.js';
import { SimDevice } from '../backends/sim/sim-device.js';
import { NANOS_PER_SECOND } from '../backends/backend.js';
import { loadBoardCatalog } from '../boards/catalog.js';
import { loadableSegments, parseElf } from '../core/elf.js';
import { systemClock } from '../core/clock.js';
import { OwnBootrom } from '../sim/rp2040/own-bootrom.js';
import type { RomMachine } from '../sim/rp2040/rom-functions.js';
import { type BenchRow, nowMs } from './measure.js';

const ROM_TEST = new URL('../scenarios/firmware/pico/rom-test.elf', import.meta.url);
const FLASH_START = 0x1000_0000;
/** Where boot2 leaves the core: the image's vector table after the 256-byte boot2 stage. */
const BOOT2_VECTOR_TABLE = 0x1000_0100;
const ROM_END = 0x4000;
const CYCLE_NANOS = 1e9 / 125_000_000;
/** Event-loop turns given before each timed run, after the collection, for the tasks it queued. */
const SETTLE_TURNS = 3;
v8.setFlagsFromString('--expose-gc');
/** V8's full collection, reachable without starting Node with --expose-gc. */
const collectGarbage = runInNewContext('gc') as () => void;

/**
 * Collects garbage and lets the event loop run what is queued before a timed run. Each run
 * builds a chip with 16 MiB of flash; the collection this causes runs partly as event-loop
 * tasks, so it lands in the first timed code that yields: the sim backend (runEngine yields
 * between slices), never the raw loop, which does not. Unsettled, the backend paid for both
 * chips: about 70 % of its time on a loaded machine (decision 0525).
 */
async function settle(): Promise<void> {
  collectGarbage();
  for (let i = 0; i < SETTLE_TURNS; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** A raw rp2040js chip with rom-test.elf loaded, ready for `rawRp2040jsRun`. */
interface RawChip {
  sim: Simulator;
  machine: RomMachine;
  stopped: boolean;
}

/**
 * rom-test.elf on raw rp2040js: its `Simulator` chip and clock, the project's ROM image mapped,
 * and the core where boot2 leaves it. Built apart from the timed loop, as the engine is (flash
 * and reset).
 */
function rawRp2040jsChip(bytes: Uint8Array, rom: OwnBootrom): RawChip {
  const sim = new Simulator();
  const { rp2040: chip } = sim;
  chip.logger = new ConsoleLogger(LogLevel.Error);
  chip.loadBootrom(rom.words);
  for (const seg of loadableSegments(parseElf(bytes))) chip.flash.set(bytes.subarray(seg.offset, seg.offset + seg.fileSizeBytes), seg.paddr - FLASH_START);
  const { core } = chip;
  core.VTOR = BOOT2_VECTOR_TABLE;
  core.SP = chip.readUint32(BOOT2_VECTOR_TABLE);
  core.PC = chip.readUint32(BOOT2_VECTOR_TABLE + 4) & ~1;
  const machine: RomMachine = {
    regs: {
      r: core.registers,
      setFlags: ({ n, z, c, v }) => {
        core.N = n;
        core.Z = z;
        core.C = c;
        core.V = v;
      },
    },
    read8: (address) => chip.readUint8(address >>> 0),
    read16: (address) => chip.readUint16(address >>> 0),
    write8: (address, value) => chip.writeUint8(address >>> 0, value),
    flash: chip.flash,
  };
  const raw: RawChip = { sim, machine, stopped: false };
  chip.onBreak = () => (raw.stopped = true);
  return raw;
}

/**
 * One run on raw rp2040js: the bare loop every rp2040js user writes (execute, tick). The ROM's
 * functions are dispatched to the same TypeScript entries the engine uses, or the image could
 * not run at all; nothing else of hilbench is in the loop (no slices, UART buffer,
 * unmodelled-access hooks). Returns the instructions executed (a ROM call counts as one, as in
 * the engine) and the host ms of the loop alone.
 */
function rawRp2040jsRun(raw: RawChip, rom: OwnBootrom): { instructions: number; hostMs: number } {
  const { clock, rp2040: chip } = raw.sim;
  const { core } = chip;
  const { machine } = raw;
  let instructions = 0;
  const startMs = nowMs();
  while (!raw.stopped) {
    instructions++;
    if (core.PC < ROM_END) {
      const outcome = rom.entryAt(core.PC)!.run(machine);
      if (outcome !== undefined) throw new Error(`rom-test took a ROM path the raw loop does not follow (${outcome.kind})`);
      core.BXWritePC(core.LR);
      continue;
    }
    clock.tick(core.executeInstruction() * CYCLE_NANOS);
  }
  return { instructions, hostMs: nowMs() - startMs };
}

/**
 * Instructions per second of an SDK-style image (boot2 stage, ROM lookups, soft float and double
 * calls: scenarios/firmware/pico/rom-test.elf, run to its exit again and again) on the sim
 * backend, against the same image's instruction stream on raw rp2040js, measured in the same run
 * for the same number of repetitions, alternating, so both see the same machine load.
 */
export async function runRomLoopBench(options: { repeats?: number } = {}): Promise<BenchRow[]> {
  const repeats = options.repeats ?? 300;
  const bytes = new Uint8Array(readFileSync(ROM_TEST));
  const pico = loadBoardCatalog().find((b) => b.id === 'pico')!;
  const backend = new SimBackend({ clock: systemClock, onUnmodelled: () => {} });
  const device = await backend.open(pico);
  if (!(device instanceof SimDevice)) throw new Error('the sim backend returned a device that is not a SimDevice');
  const rom = new OwnBootrom();
  let engineMs = 0;
  let rawMs = 0;
  let rawInstructions = 0;
  try {
    await device.flash(loadFirmwareImage(bytes));
    for (let i = 0; i < repeats; i++) {
      await settle();
      const t0 = nowMs();
      const stop = await device.run(NANOS_PER_SECOND);
      engineMs += nowMs() - t0;
      if (stop.reason !== 'exited' || stop.exitCode !== 0) throw new Error(`rom-test on the sim backend did not pass: ${JSON.stringify(stop)}`);
      await device.reset();
      const chip = rawRp2040jsChip(bytes, rom);
      await settle();
      const raw = rawRp2040jsRun(chip, rom);
      rawInstructions += raw.instructions;
      rawMs += raw.hostMs;
    }
    const engineInstructions = device.stats.instructions;
    const engineRate = engineInstructions / (engineMs / 1000) / 1e6;
    const rawRate = rawInstructions / (rawMs / 1000) / 1e6;
    return [
      {
        name: 'sim pico, SDK-style image: instructions per second',
        value: engineRate,
        unit: 'M instr/s',
        note: `rom-test.elf (boot2, ROM lookups, soft float/double calls) to its exit, ${repeats} runs, ${(engineInstructions / repeats / 1e3).toFixed(0)} k instructions each, through SimBackend`,
      },
      {
        name: 'raw rp2040js, same image: instructions per second',
        value: rawRate,
        unit: 'M instr/s',
        note: 'Simulator chip and clock, bare execute/tick loop, ROM entries dispatched to the same functions; alternated with the runs above',
      },
      { name: 'sim pico / raw rp2040js', value: engineRate / rawRate, unit: 'x', note: 'above 1: the engine is faster; below 1: its overhead' },
    ];
  } finally {
    await device.close();
  }
}
