import type { RP2040 } from 'rp2040js';
import type { Board } from '../../boards/board-schema.js';
import { type LoadTarget, type PlacedSegment, type SegmentPlan, placeSegments, planSegments } from '../load-segments.js';
import type { SimImage } from '../sim-engine.js';
import { SimError } from '../sim-error.js';
import { BOOT2_VECTOR_TABLE, checkBoot2, hasBoot2Stage } from './boot2.js';
import { hex } from './core-faults.js';

const FLASH_START = 0x10000000;
const SRAM_START = 0x20000000;
/** The start of flash the checks read: boot2's 256 bytes and the vector table's SP and reset words after them. */
const CHECKED_FLASH_BYTES = BOOT2_VECTOR_TABLE + 8 - FLASH_START;

/** An image checked against a chip and not yet written to it: where its segments go and where core 0 starts. */
export interface Rp2040Start {
  readonly segments: SegmentPlan;
  /** VTOR and SP are left as the chip has them when the real ROM's reset handler runs first. */
  readonly core: { VTOR?: number; SP?: number; PC: number };
}

/** Loads `image` into the chip's (erased) flash and SRAM and sets core 0 where it starts (see `planStart`). */
export function loadAndStart(chip: RP2040, board: Board, image: SimImage, options: { realBootrom: boolean }): PlacedSegment[] {
  return applyStart(chip, planStart(chip, board, image, options));
}

/** Writes a checked image into the chip (its flash erased before) and sets core 0 where it starts. */
export function applyStart(chip: RP2040, start: Rp2040Start): PlacedSegment[] {
  const placed = placeSegments(start.segments);
  const { core } = chip;
  if (start.core.VTOR !== undefined) core.VTOR = start.core.VTOR;
  if (start.core.SP !== undefined) core.SP = start.core.SP;
  core.PC = start.core.PC;
  return placed;
}

/**
 * Checks `image` against the chip and says where it goes and where core 0 starts, as if loaded
 * into erased flash, without writing anything: a refused image leaves the chip as it was. Bare-metal
 * images (a vector table at 0x10000000) start as if the ROM had handed over: VTOR = 0x10000000,
 * SP = word 0, PC = word 1 (Thumb bit cleared). Images with a boot2 stage (Pico SDK,
 * arduino-pico, MicroPython, Rust): with a real B1 ROM, the core starts in boot2 at 0x10000000
 * as the ROM would; without one, boot2's CRC is checked as the ROM checks it, and the core
 * starts as boot2 leaves it: VTOR = 0x10000100, SP and PC from that vector table. Throws
 * `SimError('bad-image')` for an image the chip would not start.
 */
export function planStart(chip: RP2040, board: Board, image: SimImage, options: { realBootrom: boolean }): Rp2040Start {
  const boot2Image = hasBoot2Stage(image.elf);
  const region = (name: string) => board.mcu.memory.find((m) => m.name === name);
  const flashBytes = Math.min(region('flash')?.sizeBytes ?? 0x200000, chip.flash.length);
  const sramBytes = Math.min(region('sram')?.sizeBytes ?? chip.sram.length, chip.sram.length);
  const targets: LoadTarget[] = [
    { name: 'flash', start: FLASH_START, bytes: chip.flash.subarray(0, flashBytes) },
    { name: 'sram', start: SRAM_START, bytes: chip.sram.subarray(0, sramBytes) },
  ];
  const segments = planSegments(image, targets);
  // What the checks read, as it will be once the image is in erased flash: the chip is not touched.
  const start = new Uint8Array(CHECKED_FLASH_BYTES).fill(0xff);
  for (const { target, offset, source } of segments) {
    if (target.name === 'flash' && offset < start.length) start.set(source.subarray(0, start.length - offset), offset);
  }
  const word = (at: number) => new DataView(start.buffer).getUint32(at - FLASH_START, true);
  const vectorProblem = (at: number) => {
    const sp = word(at);
    const reset = word(at + 4);
    const inFlash = reset >= FLASH_START && reset < FLASH_START + flashBytes;
    const inSram = reset >= SRAM_START && reset < SRAM_START + sramBytes;
    if ((reset & 1) === 1 && (inFlash || inSram) && sp >= SRAM_START && sp <= SRAM_START + chip.sram.length) return undefined;
    return `initial SP ${hex(sp)} must lie in SRAM, reset handler ${hex(reset)} must be a Thumb address in flash or SRAM`;
  };
  const boot2 = checkBoot2(start);
  // An image without boot2 markers (no section headers, say) still boots through boot2 when its first 256 bytes carry a valid CRC and no vector table.
  const viaBoot2 = boot2Image || (vectorProblem(FLASH_START) !== undefined && boot2.valid);
  if (viaBoot2 && options.realBootrom) {
    // The real ROM's reset handler checks boot2 and runs it; SP stays the ROM's initial SP.
    return { segments, core: { PC: FLASH_START } };
  }
  if (viaBoot2) {
    if (!boot2.valid) {
      throw new SimError(
        'bad-image',
        `the boot2 stage (the first 256 bytes of flash at ${hex(FLASH_START)}) fails the boot ROM's CRC32 check: bytes 252..255 hold ` +
          `${hex(boot2.storedCrc)} but the CRC of bytes 0..251 is ${hex(boot2.computedCrc)}; the chip would not run this image ` +
          `(it would wait in USB boot mode). Rebuild it so the toolchain pads and checksums boot2 (the Pico SDK's pad_checksum step)`,
      );
    }
    const problem = vectorProblem(BOOT2_VECTOR_TABLE);
    if (problem) {
      throw new SimError('bad-image', `the image has a boot2 stage but no vector table where boot2 leaves the core, at ${hex(BOOT2_VECTOR_TABLE)} (${problem})`);
    }
    // What boot2 does last: VTOR at the image's vector table, then SP and the reset handler from it.
    return { segments, core: { VTOR: BOOT2_VECTOR_TABLE, SP: word(BOOT2_VECTOR_TABLE), PC: word(BOOT2_VECTOR_TABLE + 4) & ~1 } };
  }
  const problem = vectorProblem(FLASH_START);
  if (problem) {
    throw new SimError(
      'bad-image',
      `the image does not start with a Cortex-M vector table at ${hex(FLASH_START)} (${problem}), nor with a boot2 stage ` +
        `(a .boot2 section, or 256 bytes whose last 4 are their CRC32)`,
    );
  }
  return { segments, core: { VTOR: FLASH_START, SP: word(FLASH_START), PC: word(FLASH_START + 4) & ~1 } };
}
