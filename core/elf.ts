/**
 * A small ELF32 little-endian reader: header, program headers, section headers and symbols,
 * which is all hilbench needs to check and load firmware. Written here rather than depending
 * on `elfinfo` (a 2022 beta with a stray runtime dependency); see
 * docs/decisions/0002-own-elf-parser.md. Tested against `readelf` output of committed firmware.
 *
 * Reference: System V gABI, "ELF Header", "Program Header", "Sections", "Symbol Table".
 */

/** The bytes are not an ELF we can load; the message says which check failed. */
export class ElfError extends Error {
  override readonly name = 'ElfError';
}

export const EM_ARM = 40;
export const EM_AVR = 83;
export const PT_LOAD = 1;

export interface ElfSegment {
  type: number;
  offset: number;
  /** Virtual address: where the segment lives while running. */
  vaddr: number;
  /** Physical (load) address: where its bytes are placed in flash. */
  paddr: number;
  fileSizeBytes: number;
  memSizeBytes: number;
  flags: number;
}

export interface ElfSection {
  name: string;
  type: number;
  flags: number;
  addr: number;
  offset: number;
  sizeBytes: number;
}

export interface ElfSymbol {
  name: string;
  value: number;
  sizeBytes: number;
  /** STT_* low nibble of st_info. */
  type: number;
  /** STB_* high nibble of st_info. */
  binding: number;
  sectionIndex: number;
}

export interface ElfFile {
  /** e_machine, e.g. 40 for ARM, 83 for AVR. */
  machine: number;
  /** e_type: 2 = executable. */
  type: number;
  entry: number;
  flags: number;
  segments: ElfSegment[];
  sections: ElfSection[];
  symbols: ElfSymbol[];
}

const machineNames: Record<number, string> = { 3: 'x86', 8: 'MIPS', 40: 'ARM', 62: 'x86-64', 83: 'AVR', 183: 'AArch64', 243: 'RISC-V' };

/** A readable name for an e_machine value, e.g. "ARM (40)". */
export function machineName(machine: number): string {
  return `${machineNames[machine] ?? 'unknown'} (${machine})`;
}

/** PT_LOAD segments that carry bytes from the file (what a loader copies into memory). */
export function loadableSegments(elf: ElfFile): ElfSegment[] {
  return elf.segments.filter((s) => s.type === PT_LOAD && s.memSizeBytes > 0);
}

/** Parses an ELF32 little-endian image. Throws `ElfError` naming the first failed check. */
export function parseElf(bytes: Uint8Array): ElfFile {
  if (bytes.length < 52) throw new ElfError(`not an ELF file: ${bytes.length} bytes is shorter than an ELF32 header (52)`);
  if (bytes[0] !== 0x7f || bytes[1] !== 0x45 || bytes[2] !== 0x4c || bytes[3] !== 0x46) {
    throw new ElfError('not an ELF file: missing the \\x7fELF magic at offset 0');
  }
  if (bytes[4] !== 1) throw new ElfError(`unsupported ELF class ${bytes[4]}: only ELF32 firmware is supported`);
  if (bytes[5] !== 1) throw new ElfError('unsupported ELF data encoding: only little-endian firmware is supported');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const u16 = (o: number) => view.getUint16(o, true);
  const u32 = (o: number) => view.getUint32(o, true);
  const within = (offset: number, length: number, what: string) => {
    if (offset < 0 || length < 0 || offset + length > bytes.length) {
      throw new ElfError(`truncated ELF: ${what} at offset ${offset} (+${length} bytes) lies beyond the file's ${bytes.length} bytes`);
    }
  };

  const type = u16(16);
  const machine = u16(18);
  const entry = u32(24);
  const phoff = u32(28);
  const shoff = u32(32);
  const flags = u32(36);
  const phentsize = u16(42);
  const phnum = u16(44);
  const shentsize = u16(46);
  const shnum = u16(48);
  const shstrndx = u16(50);

  const segments: ElfSegment[] = [];
  if (phnum > 0) {
    if (phentsize < 32) throw new ElfError(`bad program header size ${phentsize} (ELF32 needs 32)`);
    within(phoff, phnum * phentsize, 'program header table');
    for (let i = 0; i < phnum; i++) {
      const o = phoff + i * phentsize;
      const seg: ElfSegment = {
        type: u32(o),
        offset: u32(o + 4),
        vaddr: u32(o + 8),
        paddr: u32(o + 12),
        fileSizeBytes: u32(o + 16),
        memSizeBytes: u32(o + 20),
        flags: u32(o + 24),
      };
      if (seg.type === PT_LOAD) within(seg.offset, seg.fileSizeBytes, `segment ${i}`);
      segments.push(seg);
    }
  }

  const sections: ElfSection[] = [];
  const rawSections: Array<ElfSection & { nameOffset: number; link: number; entsize: number }> = [];
  if (shnum > 0 && shoff > 0) {
    if (shentsize < 40) throw new ElfError(`bad section header size ${shentsize} (ELF32 needs 40)`);
    within(shoff, shnum * shentsize, 'section header table');
    for (let i = 0; i < shnum; i++) {
      const o = shoff + i * shentsize;
      rawSections.push({
        name: '',
        nameOffset: u32(o),
        type: u32(o + 4),
        flags: u32(o + 8),
        addr: u32(o + 12),
        offset: u32(o + 16),
        sizeBytes: u32(o + 20),
        link: u32(o + 24),
        entsize: u32(o + 36),
      });
    }
    const strtab = rawSections[shstrndx];
    for (const s of rawSections) {
      s.name = strtab && strtab.type === 3 ? readString(bytes, strtab.offset + s.nameOffset, strtab.offset + strtab.sizeBytes) : '';
      sections.push({ name: s.name, type: s.type, flags: s.flags, addr: s.addr, offset: s.offset, sizeBytes: s.sizeBytes });
    }
  }

  const symbols: ElfSymbol[] = [];
  const symtab = rawSections.find((s) => s.type === 2 /* SHT_SYMTAB */);
  if (symtab && symtab.entsize >= 16) {
    within(symtab.offset, symtab.sizeBytes, 'symbol table');
    const names = rawSections[symtab.link];
    for (let o = symtab.offset + symtab.entsize; o + 16 <= symtab.offset + symtab.sizeBytes; o += symtab.entsize) {
      const info = bytes[o + 12]!;
      symbols.push({
        name: names ? readString(bytes, names.offset + u32(o), names.offset + names.sizeBytes) : '',
        value: u32(o + 4),
        sizeBytes: u32(o + 8),
        type: info & 0xf,
        binding: info >> 4,
        sectionIndex: u16(o + 14),
      });
    }
  }

  return { machine, type, entry, flags, segments, sections, symbols };
}

function readString(bytes: Uint8Array, start: number, limit: number): string {
  let end = start;
  const max = Math.min(limit, bytes.length);
  while (end < max && bytes[end] !== 0) end++;
  return new TextDecoder().decode(bytes.subarray(start, end));
}

/** Reads the bytes of a section by name, or undefined when absent or without file bytes (NOBITS). */
export function sectionBytes(bytes: Uint8Array, elf: ElfFile, name: string): Uint8Array | undefined {
  const s = elf.sections.find((x) => x.name === name);
  if (!s || s.type === 8 /* SHT_NOBITS */) return undefined;
  return bytes.subarray(s.offset, s.offset + s.sizeBytes);
}
