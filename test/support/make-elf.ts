import { createHash } from 'node:crypto';
import type { FirmwareImage } from '../../backends/backend.js';
import { EM_ARM, parseElf } from '../../core/elf.js';

/**
 * Builds small ELF32 little-endian images in memory for tests: any machine, entry, loadable
 * segments and extra named sections (e.g. `.hilbench.mock` with `fault=flash-fail`).
 */
export interface ElfSpec {
  machine?: number;
  entry?: number;
  segments?: Array<{ paddr: number; vaddr?: number; data: Uint8Array; memSizeBytes?: number }>;
  sections?: Array<{ name: string; data: Uint8Array }>;
}

export function makeElf(spec: ElfSpec = {}): Uint8Array {
  const machine = spec.machine ?? EM_ARM;
  const segments = spec.segments ?? [{ paddr: 0, data: new Uint8Array([0x00, 0x10, 0x00, 0x20, 0x09, 0x00, 0x00, 0x00, 0xfe, 0xe7]) }];
  const sections = spec.sections ?? [];
  const ehSize = 52;
  const phSize = 32;
  const shSize = 40;
  let offset = ehSize + phSize * segments.length;
  const segOffsets = segments.map((s) => {
    const o = offset;
    offset += s.data.length;
    return o;
  });
  const secOffsets = sections.map((s) => {
    const o = offset;
    offset += s.data.length;
    return o;
  });
  const names = ['', ...sections.map((s) => s.name), '.shstrtab'];
  const nameOffsets: number[] = [];
  let strtab = '';
  for (const n of names) {
    nameOffsets.push(strtab.length);
    strtab += `${n}\0`;
  }
  const strtabBytes = new TextEncoder().encode(strtab);
  const strtabOffset = offset;
  offset += strtabBytes.length;
  offset = (offset + 3) & ~3;
  const shoff = offset;
  const shnum = sections.length + 2;
  const total = shoff + shnum * shSize;
  const out = new Uint8Array(total);
  const v = new DataView(out.buffer);
  out.set([0x7f, 0x45, 0x4c, 0x46, 1, 1, 1], 0);
  v.setUint16(16, 2, true); // ET_EXEC
  v.setUint16(18, machine, true);
  v.setUint32(20, 1, true);
  v.setUint32(24, spec.entry ?? (segments[0]?.paddr ?? 0) + 9, true);
  v.setUint32(28, ehSize, true);
  v.setUint32(32, shoff, true);
  v.setUint16(40, ehSize, true);
  v.setUint16(42, phSize, true);
  v.setUint16(44, segments.length, true);
  v.setUint16(46, shSize, true);
  v.setUint16(48, shnum, true);
  v.setUint16(50, shnum - 1, true);
  segments.forEach((s, i) => {
    const o = ehSize + i * phSize;
    v.setUint32(o, 1, true); // PT_LOAD
    v.setUint32(o + 4, segOffsets[i]!, true);
    v.setUint32(o + 8, s.vaddr ?? s.paddr, true);
    v.setUint32(o + 12, s.paddr, true);
    v.setUint32(o + 16, s.data.length, true);
    v.setUint32(o + 20, s.memSizeBytes ?? s.data.length, true);
    v.setUint32(o + 24, 5, true);
    out.set(s.data, segOffsets[i]!);
  });
  sections.forEach((s, i) => out.set(s.data, secOffsets[i]!));
  out.set(strtabBytes, strtabOffset);
  const writeSection = (index: number, nameOffset: number, type: number, fileOffset: number, size: number) => {
    const o = shoff + index * shSize;
    v.setUint32(o, nameOffset, true);
    v.setUint32(o + 4, type, true);
    v.setUint32(o + 16, fileOffset, true);
    v.setUint32(o + 20, size, true);
    v.setUint32(o + 32, 1, true);
  };
  sections.forEach((s, i) => writeSection(i + 1, nameOffsets[i + 1]!, 1 /* PROGBITS */, secOffsets[i]!, s.data.length));
  writeSection(shnum - 1, nameOffsets[names.length - 1]!, 3 /* STRTAB */, strtabOffset, strtabBytes.length);
  return out;
}

/** Wraps raw ELF bytes as a `FirmwareImage`, as the server does after validation. */
export function firmwareImage(bytes: Uint8Array): FirmwareImage {
  return { bytes, sha256: createHash('sha256').update(bytes).digest('hex'), elf: parseElf(bytes) };
}

/** Where the RP2040's flash starts: the load address of the small test images below. */
export const PICO_FLASH = 0x10000000;

/**
 * A small ARM image that fits the pico's flash, optionally carrying a mock-backend fault in its
 * `.hilbench.mock` section (docs/backends/mock.md), so the fault travels through the HTTP API.
 */
export function picoTestElf(options: { fault?: string; sections?: Array<{ name: string; data: Uint8Array }>; sizeBytes?: number } = {}): Uint8Array {
  const sections = [...(options.sections ?? [])];
  if (options.fault) sections.push({ name: '.hilbench.mock', data: new TextEncoder().encode(`fault=${options.fault}`) });
  return makeElf({ segments: [{ paddr: PICO_FLASH, data: new Uint8Array(options.sizeBytes ?? 64) }], sections });
}
