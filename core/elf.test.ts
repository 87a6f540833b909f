import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { makeElf } from '../test/support/make-elf.js';
import { EM_ARM, EM_AVR, ElfError, loadableSegments, machineName, parseElf, PT_LOAD, sectionBytes } from './elf.js';

/**
 * parseElf against GNU readelf. The literals below were produced once with
 * `readelf -h -l -S -s --wide` (binutils 2.40, Debian bookworm) on the committed images; their
 * sha256 is pinned in firmware/examples/manifest.json, so a rebuilt image fails that test first.
 */
const firmware = (p: string) => new Uint8Array(readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'firmware', 'examples', p)));

const SHT_PROGBITS = 1;
const SHT_SYMTAB = 2;
const SHT_STRTAB = 3;
const SHT_NOTE = 7;
const SHT_NOBITS = 8;
const SHT_ARM_ATTRIBUTES = 0x70000003;
const STT_NOTYPE = 0;
const STT_OBJECT = 1;
const STT_FUNC = 2;
const STB_LOCAL = 0;
const STB_GLOBAL = 1;
const STB_WEAK = 2;

describe('parseElf on firmware/examples/pico/hello.elf (arm-none-eabi-gcc 12.2, Cortex-M0+)', () => {
  const elf = parseElf(firmware('pico/hello.elf'));

  it('reads the header as readelf -h does', () => {
    // Machine: ARM; Type: EXEC; Entry point address: 0x10000041; Flags: 0x5000200 (EABI5, soft-float)
    expect(elf.machine).toBe(EM_ARM);
    expect(elf.type).toBe(2);
    expect(elf.entry).toBe(0x10000041);
    expect(elf.flags).toBe(0x5000200);
  });

  it('reads the program headers as readelf -l does', () => {
    // LOAD 0x000060 0x10000000 0x10000000 0x00330 0x00330 R E 0x10
    expect(elf.segments).toEqual([{ type: PT_LOAD, offset: 0x60, vaddr: 0x10000000, paddr: 0x10000000, fileSizeBytes: 0x330, memSizeBytes: 0x330, flags: 5 }]);
    expect(loadableSegments(elf)).toHaveLength(1);
  });

  it('reads the section headers as readelf -S does', () => {
    expect(elf.sections.map(({ name, type, addr, offset, sizeBytes }) => ({ name, type, addr, offset, sizeBytes }))).toEqual([
      { name: '', type: 0, addr: 0, offset: 0, sizeBytes: 0 },
      { name: '.text', type: SHT_PROGBITS, addr: 0x10000000, offset: 0x60, sizeBytes: 0x330 },
      { name: '.data', type: SHT_PROGBITS, addr: 0x20000000, offset: 0x390, sizeBytes: 0 },
      { name: '.bss', type: SHT_NOBITS, addr: 0x20000000, offset: 0, sizeBytes: 0 },
      { name: '.ARM.attributes', type: SHT_ARM_ATTRIBUTES, addr: 0, offset: 0x390, sizeBytes: 0x2c },
      { name: '.symtab', type: SHT_SYMTAB, addr: 0, offset: 0x3bc, sizeBytes: 0x2f0 },
      { name: '.strtab', type: SHT_STRTAB, addr: 0, offset: 0x6ac, sizeBytes: 0x136 },
      { name: '.shstrtab', type: SHT_STRTAB, addr: 0, offset: 0x7e2, sizeBytes: 0x3c },
    ]);
    expect(elf.sections[1]!.flags).toBe(0x6); // AX
    expect(elf.sections[2]!.flags).toBe(0x3); // WA
  });

  it('reads the symbol table as readelf -s does', () => {
    // "Symbol table '.symtab' contains 47 entries", entry 0 being the null symbol we skip.
    expect(elf.symbols).toHaveLength(46);
    const sym = (name: string) => elf.symbols.find((s) => s.name === name);
    expect(sym('reset_handler')).toEqual({ name: 'reset_handler', value: 0x10000041, sizeBytes: 60, type: STT_FUNC, binding: STB_GLOBAL, sectionIndex: 1 });
    expect(sym('vector_table')).toEqual({ name: 'vector_table', value: 0x10000000, sizeBytes: 64, type: STT_OBJECT, binding: STB_GLOBAL, sectionIndex: 1 });
    expect(sym('main')).toMatchObject({ value: 0x100001bd, sizeBytes: 56, type: STT_FUNC });
    expect(sym('__udivsi3')).toMatchObject({ value: 0x100001f5, sizeBytes: 266 });
    expect(sym('__aeabi_idiv0')).toMatchObject({ value: 0x10000309, sizeBytes: 2, binding: STB_WEAK });
    expect(sym('__stack_top')).toMatchObject({ value: 0x20042000, type: STT_NOTYPE });
    expect(sym('startup.c')).toMatchObject({ type: 4 /* STT_FILE */, binding: STB_LOCAL, sectionIndex: 0xfff1 /* SHN_ABS */ });
    expect(elf.symbols.at(-1)).toMatchObject({ name: '__data_start', value: 0x20000000, sectionIndex: 2 });
  });

  it('returns a section’s bytes, and nothing for NOBITS', () => {
    const bytes = firmware('pico/hello.elf');
    const text = sectionBytes(bytes, elf, '.text')!;
    expect(text).toHaveLength(0x330);
    // Vector table word 0 (initial SP = top of SRAM) and word 1 (reset handler, Thumb bit).
    const view = new DataView(text.buffer, text.byteOffset);
    expect(view.getUint32(0, true)).toBe(0x20042000);
    expect(view.getUint32(4, true)).toBe(0x10000041);
    expect(sectionBytes(bytes, elf, '.bss')).toBeUndefined();
    expect(sectionBytes(bytes, elf, '.nope')).toBeUndefined();
  });
});

describe('parseElf on firmware/examples/uno/hello.elf (avr-gcc 5.4, ATmega328P)', () => {
  const elf = parseElf(firmware('uno/hello.elf'));

  it('reads the header: Atmel AVR, entry 0, flags 0x5 (avr:5)', () => {
    expect(elf.machine).toBe(EM_AVR);
    expect(elf.type).toBe(2);
    expect(elf.entry).toBe(0);
    expect(elf.flags).toBe(5);
  });

  it('reads .data with its SRAM run address and its load address in flash', () => {
    // LOAD 0x000074 0x00000000 0x00000000 0x00226 0x00226 R E 0x2
    // LOAD 0x00029a 0x00800100 0x00000226 0x00022 0x00022 RW  0x1
    expect(elf.segments).toEqual([
      { type: PT_LOAD, offset: 0x74, vaddr: 0, paddr: 0, fileSizeBytes: 0x226, memSizeBytes: 0x226, flags: 5 },
      { type: PT_LOAD, offset: 0x29a, vaddr: 0x800100, paddr: 0x226, fileSizeBytes: 0x22, memSizeBytes: 0x22, flags: 6 },
    ]);
  });

  it('reads the sections, including a long name (.note.gnu.avr.deviceinfo)', () => {
    expect(elf.sections.map((s) => [s.name, s.type, s.addr, s.offset, s.sizeBytes])).toEqual([
      ['', 0, 0, 0, 0],
      ['.data', SHT_PROGBITS, 0x800100, 0x29a, 0x22],
      ['.text', SHT_PROGBITS, 0, 0x74, 0x226],
      ['.note.gnu.avr.deviceinfo', SHT_NOTE, 0, 0x2bc, 0x40],
      ['.shstrtab', SHT_STRTAB, 0, 0xc8e, 0x40],
      ['.symtab', SHT_SYMTAB, 0, 0x2fc, 0x5b0],
      ['.strtab', SHT_STRTAB, 0, 0x8ac, 0x3e2],
    ]);
  });

  it('reads the symbols (91 entries less the null one)', () => {
    expect(elf.symbols).toHaveLength(90);
    const sym = (name: string) => elf.symbols.find((s) => s.name === name);
    expect(sym('main')).toMatchObject({ value: 0x19a, sizeBytes: 68, type: STT_FUNC, binding: STB_GLOBAL, sectionIndex: 2 });
    expect(sym('uart_putu')).toMatchObject({ value: 0xfe, sizeBytes: 156 });
    expect(sym('__data_start')).toMatchObject({ value: 0x800100, sectionIndex: 1 });
    expect(sym('__data_end')).toMatchObject({ value: 0x800122 });
    expect(sym('__data_load_start')).toMatchObject({ value: 0x226, sectionIndex: 0xfff1 });
    expect(sym('__vector_22')).toMatchObject({ value: 0x92, binding: STB_WEAK });
  });
});

describe('parseElf on firmware/examples/mps2-an505/exit.elf (Cortex-M33, Secure aliases)', () => {
  const elf = parseElf(firmware('mps2-an505/exit.elf'));
  it('matches readelf', () => {
    expect(elf.entry).toBe(0x10000041);
    expect(elf.segments).toEqual([{ type: PT_LOAD, offset: 0x60, vaddr: 0x10000000, paddr: 0x10000000, fileSizeBytes: 0x11c, memSizeBytes: 0x11c, flags: 5 }]);
    expect(elf.sections.find((s) => s.name === '.data')).toMatchObject({ addr: 0x38000000, offset: 0x17c });
    expect(elf.symbols.find((s) => s.name === 'board_exit')).toMatchObject({ value: 0x10000081, sizeBytes: 20 });
    expect(elf.symbols.find((s) => s.name === '__stack_top')).toMatchObject({ value: 0x38400000 });
  });
});

describe('parseElf refuses what it cannot read, saying which check failed', () => {
  const good = makeElf();
  const patched = (offset: number, bytes: number[]) => {
    const copy = good.slice();
    copy.set(bytes, offset);
    return copy;
  };

  it.each([
    ['fewer bytes than a header', good.subarray(0, 51), /shorter than an ELF32 header \(52\)/],
    ['no magic', patched(0, [0x7f, 0x45, 0x4c, 0x47]), /missing the \\x7fELF magic/],
    ['ELF64', patched(4, [2]), /unsupported ELF class 2/],
    ['big-endian', patched(5, [2]), /only little-endian/],
    ['a short program header entry', patched(42, [16, 0]), /bad program header size 16/],
    ['a program header table past the end', patched(28, [0xff, 0xff, 0, 0]), /truncated ELF: program header table/],
    ['a segment past the end', patched(52 + 16, [0xff, 0xff, 0, 0]), /truncated ELF: segment 0/],
  ])('%s', (_what, bytes, message) => {
    expect(() => parseElf(bytes)).toThrow(ElfError);
    expect(() => parseElf(bytes)).toThrow(message);
  });

  it('reads an image made by the test helper back exactly', () => {
    const elf = parseElf(makeElf({ machine: EM_AVR, entry: 0x68, segments: [{ paddr: 0x100, vaddr: 0x800100, data: new Uint8Array(8), memSizeBytes: 24 }] }));
    expect(elf).toMatchObject({ machine: EM_AVR, entry: 0x68, type: 2 });
    expect(loadableSegments(elf)).toEqual([{ type: PT_LOAD, offset: 84, vaddr: 0x800100, paddr: 0x100, fileSizeBytes: 8, memSizeBytes: 24, flags: 5 }]);
  });

  it('names machines for messages', () => {
    expect(machineName(40)).toBe('ARM (40)');
    expect(machineName(83)).toBe('AVR (83)');
    expect(machineName(9999)).toBe('unknown (9999)');
  });
});
