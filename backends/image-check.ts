import { createHash } from 'node:crypto';
import { type Board, elfMachineFor, type MemoryRegion } from '../boards/board-schema.js';
import { type ElfFile, ElfError, type ElfSegment, loadableSegments, machineName, parseElf } from '../core/elf.js';
import { BackendError, type FirmwareImage } from './backend.js';

/**
 * The one check every backend (and the bench API, before queueing a job) applies to firmware:
 * the bytes are an ELF32 executable for the board's architecture whose loadable segments fit
 * the board's memory map. A failure is the user's (`bad-image`) and says exactly what is wrong.
 */

/** Parses bytes into a FirmwareImage (sha256 + ELF). Throws BackendError('bad-image', msg) for non-ELF etc. */
export function loadFirmwareImage(bytes: Uint8Array): FirmwareImage {
  // Our own copy: the sha256 must keep describing the bytes a backend later flashes.
  const own = Uint8Array.from(bytes);
  let elf: ElfFile;
  try {
    elf = parseElf(own);
  } catch (err) {
    if (err instanceof ElfError) throw new BackendError('bad-image', `firmware is not a usable ELF file: ${err.message}`, { cause: err });
    throw err;
  }
  return { bytes: own, sha256: createHash('sha256').update(own).digest('hex'), elf };
}

const ET_EXEC = 2;
const elfTypeNames: Record<number, string> = { 0: 'ET_NONE', 1: 'ET_REL (an object file)', 2: 'ET_EXEC', 3: 'ET_DYN (a shared object or PIE)', 4: 'ET_CORE (a core dump)' };
/** SHF_ALLOC: the section occupies memory at run time. */
const SHF_ALLOC = 0x2;

/** `0x0001f000`: eight hex digits, so ranges line up in messages. */
const hex = (n: number) => `0x${n.toString(16).padStart(8, '0')}`;
/** A half-open range written `0xSTART..0xEND`, the end exclusive (start + size). */
const range = (start: number, sizeBytes: number) => `${hex(start)}..${hex(start + sizeBytes)}`;
const describeRegions = (regions: readonly MemoryRegion[]) =>
  [...regions]
    .sort((a, b) => a.start - b.start)
    .map((r) => `${r.name} (${r.kind}) ${range(r.start, r.sizeBytes)}`)
    .join(', ');

/** Regions a segment may be loaded into or run from. EEPROM contents are never programmed by a backend. */
const placeableKinds: ReadonlySet<MemoryRegion['kind']> = new Set(['flash', 'rom', 'ram']);

function regionHolding(regions: readonly MemoryRegion[], start: number, sizeBytes: number): MemoryRegion | undefined {
  return regions.find((r) => start >= r.start && start + sizeBytes <= r.start + r.sizeBytes);
}

/** "segment 1 (.data)": the program-header index as readelf numbers it, with the sections inside. */
function segmentName(elf: ElfFile, segment: ElfSegment): string {
  const index = elf.segments.indexOf(segment);
  const sections = elf.sections
    .filter((s) => (s.flags & SHF_ALLOC) !== 0 && s.sizeBytes > 0 && s.addr >= segment.vaddr && s.addr < segment.vaddr + segment.memSizeBytes)
    .map((s) => s.name)
    .filter((n) => n !== '');
  return `segment ${index}${sections.length > 0 ? ` (${sections.join(' ')})` : ''}`;
}

/** Throws BackendError('bad-image', msg) when the image cannot run on the board: e_machine differs from the
 *  board's architecture (say both, e.g. "ELF machine AVR (83) does not match mps2-an385's architecture arm (ARM (40))"),
 *  not an executable, no loadable segment, or a PT_LOAD segment whose load range (paddr..paddr+filesz) is not
 *  inside one flash/rom/ram region or whose run range (vaddr..vaddr+memsz) is not inside one region (name the
 *  segment, its range in hex and the board's regions). */
export function checkImageForBoard(image: FirmwareImage, board: Board): void {
  const { elf } = image;
  const { architecture } = board.mcu;
  const expected = elfMachineFor[architecture];
  if (elf.machine !== expected) {
    throw new BackendError(
      'bad-image',
      `ELF machine ${machineName(elf.machine)} does not match ${board.id}'s architecture ${architecture} (${machineName(expected)})`,
    );
  }
  if (elf.type !== ET_EXEC) {
    throw new BackendError(
      'bad-image',
      `not an executable: ELF type ${elfTypeNames[elf.type] ?? `unknown (${elf.type})`}; link the firmware into a fixed-address executable (ET_EXEC)`,
    );
  }
  const segments = loadableSegments(elf);
  if (segments.length === 0) throw new BackendError('bad-image', 'the ELF has no loadable (PT_LOAD) segment: nothing to flash');

  const placeable = board.mcu.memory.filter((r) => placeableKinds.has(r.kind));
  for (const segment of segments) {
    // Load range: where the bytes from the file go (the LMA; for AVR .data and Cortex-M .data, in flash).
    if (segment.fileSizeBytes > 0 && !regionHolding(placeable, segment.paddr, segment.fileSizeBytes)) {
      throw new BackendError(
        'bad-image',
        `${segmentName(elf, segment)} loads at ${range(segment.paddr, segment.fileSizeBytes)} (physical address + file size), ` +
          `which is not inside one flash, rom or ram region of ${board.id}: ${describeRegions(board.mcu.memory)}` +
          eepromHint(board.mcu.memory, segment.paddr),
      );
    }
    // Run range: where the segment lives while the program runs (the VMA; AVR data at 0x800000 + SRAM address).
    if (!regionHolding(placeable, segment.vaddr, segment.memSizeBytes)) {
      throw new BackendError(
        'bad-image',
        `${segmentName(elf, segment)} runs at ${range(segment.vaddr, segment.memSizeBytes)} (virtual address + memory size), ` +
          `which is not inside one flash, rom or ram region of ${board.id}: ${describeRegions(board.mcu.memory)}` +
          eepromHint(board.mcu.memory, segment.vaddr),
      );
    }
  }
}

function eepromHint(regions: readonly MemoryRegion[], address: number): string {
  const eeprom = regions.find((r) => r.kind === 'eeprom' && address >= r.start && address < r.start + r.sizeBytes);
  return eeprom ? `; it is EEPROM data (${eeprom.name}), which no hilbench backend programs: drop the EEMEM variables or their section` : '';
}
