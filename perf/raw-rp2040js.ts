import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ConsoleLogger, LogLevel, Simulator } from 'rp2040js';
import { loadableSegments, parseElf } from '../core/elf.js';
import type { OwnBootrom } from '../sim/rp2040/own-bootrom.js';
import type { RomMachine } from '../sim/rp2040/rom-functions.js';
import { cpuMs } from './measure.js';

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
 * Collects garbage and lets the event loop run what is queued before a timed run. Each run
 * builds a chip with 16 MiB of flash; the collection this causes runs partly as event-loop
 * tasks, so it lands in the first timed code that yields: the sim backend (runEngine yields
 * between slices), never the raw loop, which does not. Unsettled, the backend paid for both
 * chips: about 70 % of its time on a loaded machine (decision 0525).
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
 * An SDK-style image (a boot2 stage) on raw rp2040js: its `Simulator` chip and clock, the project's ROM image mapped,
 * and the core where boot2 leaves it. Built apart from the timed loop, as the engine is (flash
 * and reset).
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
export function rawRp2040jsRun(raw: RawChip, rom: OwnBootrom): { instructions: number; hostMs: number; simulatedNanos: number } {
  const { clock, rp2040: chip } = raw.sim;
  const { core } = chip;
  const { machine } = raw;
  let instructions = 0;
  // The cycle time follows clk_sys as the firmware sets it, as in the engine (rp2040js's own Simulator assumes 125 MHz).
  let cycleNanos = 1e9 / chip.clkSys;
  chip.addClockListener((clkSys) => (cycleNanos = 1e9 / clkSys));
  const startMs = cpuMs();
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
  return { instructions, hostMs: cpuMs() - startMs, simulatedNanos: clock.nanos };
}

