import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Board } from '../boards/board-schema.js';
import { loadBoardCatalog } from '../boards/catalog.js';
import { EM_ARM, EM_AVR } from '../core/elf.js';
import { firmwarePath, loadFirmwareManifest } from '../firmware/examples/firmware-manifest.js';
import { type ElfSpec, makeElf } from '../test/support/make-elf.js';
import { BackendError } from './backend.js';
import { checkImageForBoard, loadFirmwareImage } from './image-check.js';

const boards = new Map(loadBoardCatalog().map((b) => [b.id, b]));
const board = (id: string): Board => boards.get(id) ?? expect.unreachable(`no board ${id}`);

/** Runs `fn`, expects a bad-image BackendError and returns its message. */
function badImage(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(BackendError);
    expect((err as BackendError).kind).toBe('bad-image');
    expect((err as BackendError).isInfrastructure).toBe(false);
    return (err as BackendError).message;
  }
  return expect.unreachable('expected a bad-image BackendError');
}

const check = (bytes: Uint8Array, boardId: string) => checkImageForBoard(loadFirmwareImage(bytes), board(boardId));

describe('loadFirmwareImage', () => {
  it('parses an ELF and hashes exactly its bytes', () => {
    const bytes = makeElf({ segments: [{ paddr: 0x10000000, data: new Uint8Array([1, 2, 3, 4]) }] });
    const image = loadFirmwareImage(bytes);
    expect(image.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(image.elf.machine).toBe(EM_ARM);
    expect([...image.bytes]).toEqual([...bytes]);
  });

  it('keeps its own copy, so the hash keeps describing what gets flashed', () => {
    const bytes = makeElf();
    const image = loadFirmwareImage(bytes);
    bytes[60] = bytes[60]! ^ 0xff;
    expect(createHash('sha256').update(image.bytes).digest('hex')).toBe(image.sha256);
  });

  it.each([
    ['empty input', new Uint8Array(0), /not a usable ELF file: not an ELF file: 0 bytes/],
    ['a HEX file', new TextEncoder().encode(':100000000C9434000C943E000C943E000C943E0082\n'.repeat(4)), /missing the \\x7fELF magic/],
    ['an ELF64 header', Uint8Array.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, ...new Array<number>(57).fill(0)]), /unsupported ELF class 2/],
    ['a truncated ELF', makeElf().subarray(0, 70), /truncated ELF/],
  ])('rejects %s as bad-image', (_what, bytes, message) => {
    expect(badImage(() => loadFirmwareImage(bytes))).toMatch(message);
  });
});

describe('checkImageForBoard', () => {
  it('names both machines when the architecture differs', () => {
    expect(badImage(() => check(makeElf({ machine: EM_AVR }), 'mps2-an385'))).toBe(
      "ELF machine AVR (83) does not match mps2-an385's architecture arm (ARM (40))",
    );
    expect(badImage(() => check(makeElf({ machine: EM_ARM, segments: [{ paddr: 0, data: new Uint8Array(4) }] }), 'uno'))).toBe(
      "ELF machine ARM (40) does not match uno's architecture avr (AVR (83))",
    );
    expect(badImage(() => check(makeElf({ machine: 243 }), 'pico'))).toMatch(/ELF machine RISC-V \(243\) does not match pico's/);
  });

  it('rejects relocatable objects and shared objects', () => {
    const withType = (type: number) => {
      const bytes = makeElf({ segments: [{ paddr: 0x10000000, data: new Uint8Array(8) }] });
      new DataView(bytes.buffer).setUint16(16, type, true);
      return bytes;
    };
    expect(badImage(() => check(withType(1), 'pico'))).toMatch(/^not an executable: ELF type ET_REL \(an object file\)/);
    expect(badImage(() => check(withType(3), 'pico'))).toMatch(/ET_DYN/);
    expect(() => check(withType(2), 'pico')).not.toThrow();
  });

  it('rejects an executable with nothing to load', () => {
    expect(badImage(() => check(makeElf({ segments: [] }), 'pico'))).toMatch(/no loadable \(PT_LOAD\) segment/);
    // A PT_LOAD with zero memory size carries nothing either.
    expect(badImage(() => check(makeElf({ segments: [{ paddr: 0x10000000, data: new Uint8Array(0) }] }), 'pico'))).toMatch(/no loadable/);
  });

  it('accepts segments that fill a region exactly, and rejects one byte more', () => {
    const fill = (sizeBytes: number) => makeElf({ segments: [{ paddr: 0x08000000, data: new Uint8Array(sizeBytes) }] });
    expect(() => check(fill(0x20000), 'stm32vldiscovery')).not.toThrow(); // 128 KiB flash
    const message = badImage(() => check(fill(0x20001), 'stm32vldiscovery'));
    expect(message).toBe(
      'segment 0 loads at 0x08000000..0x08020001 (physical address + file size), which is not inside one flash, rom or ram region of stm32vldiscovery: ' +
        'flash (flash) 0x08000000..0x08020000, sram (ram) 0x20000000..0x20002000',
    );
  });

  it('rejects an image linked for another board of the same architecture, naming the segment and the regions', () => {
    // STM32 firmware (flash at 0x08000000) on the micro:bit (flash at 0).
    const message = badImage(() => check(makeElf({ segments: [{ paddr: 0x08000000, data: new Uint8Array(16) }] }), 'microbit'));
    expect(message).toMatch(/^segment 0 loads at 0x08000000\.\.0x08000010 .* of microbit: flash \(flash\) 0x00000000\.\.0x00040000, ram \(ram\) 0x20000000\.\.0x20004000$/);
  });

  it('rejects a segment that ends at 2^32, printing the exclusive end in full (fast-check counterexample)', () => {
    const image = loadFirmwareImage(makeElf({ segments: [{ paddr: 0xffffffd4, vaddr: 0, data: new Uint8Array(44) }] }));
    expect(badImage(() => checkImageForBoard(image, board('lm3s6965evb')))).toMatch(/^segment 0 loads at 0xffffffd4\.\.0x100000000 /);
  });

  it('rejects a segment that straddles two adjacent regions: it must fit inside one', () => {
    const twoRegions: Board = {
      ...board('pico'),
      id: 'adjacent',
      mcu: {
        ...board('pico').mcu,
        memory: [
          { name: 'flash', kind: 'flash', start: 0x0, sizeBytes: 0x1000 },
          { name: 'ram', kind: 'ram', start: 0x1000, sizeBytes: 0x1000 },
        ],
      },
    };
    const image = loadFirmwareImage(makeElf({ segments: [{ paddr: 0xff0, data: new Uint8Array(0x20) }] }));
    expect(badImage(() => checkImageForBoard(image, twoRegions))).toMatch(/segment 0 loads at 0x00000ff0\.\.0x00001010/);
  });

  it('checks the run range (vaddr + memsz) separately from the load range (paddr + filesz)', () => {
    // Cortex-M .data: bytes in flash, lives in SRAM, with .bss-like zero fill after it.
    const data = (vaddr: number, memSizeBytes: number) =>
      makeElf({ segments: [{ paddr: 0x10000000, vaddr, data: new Uint8Array(16), memSizeBytes }] });
    expect(() => check(data(0x20000000, 0x1000), 'pico')).not.toThrow();
    expect(badImage(() => check(data(0x20041ff0, 0x20), 'pico'))).toBe(
      'segment 0 runs at 0x20041ff0..0x20042010 (virtual address + memory size), which is not inside one flash, rom or ram region of pico: ' +
        'bootrom (rom) 0x00000000..0x00004000, flash (flash) 0x10000000..0x10200000, sram (ram) 0x20000000..0x20042000',
    );
  });

  it('accepts a Pico SDK style layout: boot2, text, .data and scratch banks loading from flash', () => {
    const image = loadFirmwareImage(
      makeElf({
        entry: 0x100001e9,
        segments: [
          { paddr: 0x10000000, data: new Uint8Array(0x100) }, // .boot2, checksummed 256 bytes
          { paddr: 0x10000100, data: new Uint8Array(0x4000) }, // .text, .rodata
          { paddr: 0x10004100, vaddr: 0x20000000, data: new Uint8Array(0x200), memSizeBytes: 0x800 }, // .data + .bss
          { paddr: 0x10004300, vaddr: 0x20040000, data: new Uint8Array(0x40) }, // .scratch_x (SRAM4)
          { paddr: 0x10004340, vaddr: 0x20041000, data: new Uint8Array(0x40) }, // .scratch_y (SRAM5)
        ],
      }),
    );
    expect(() => checkImageForBoard(image, board('pico'))).not.toThrow();
  });

  it('accepts a zero-file-size (.bss only) segment by its run range alone', () => {
    const bss = (vaddr: number) =>
      makeElf({ segments: [{ paddr: 0x10000000, data: new Uint8Array(4) }, { paddr: 0xdead0000, vaddr, data: new Uint8Array(0), memSizeBytes: 0x100 }] });
    expect(() => check(bss(0x20000100), 'pico')).not.toThrow();
    expect(badImage(() => check(bss(0x30000000), 'pico'))).toMatch(/^segment 1 runs at 0x30000000\.\.0x30000100/);
  });

  describe('AVR', () => {
    const avr = (segments: ElfSpec['segments']) => makeElf({ machine: EM_AVR, entry: 0, segments });

    it('accepts .data that runs at 0x800100 (data space) and loads from flash', () => {
      expect(() =>
        check(avr([{ paddr: 0, data: new Uint8Array(0x200) }, { paddr: 0x200, vaddr: 0x800100, data: new Uint8Array(0x22) }]), 'uno'),
      ).not.toThrow();
    });

    it('rejects .data that would overflow the 2 KiB SRAM', () => {
      const message = badImage(() => check(avr([{ paddr: 0x200, vaddr: 0x800100, data: new Uint8Array(16), memSizeBytes: 0x801 }]), 'uno'));
      expect(message).toMatch(/^segment 0 runs at 0x00800100\.\.0x00800901 .* sram \(ram\) 0x00800100\.\.0x00800900/);
    });

    it('rejects EEPROM contents with a hint, since no backend programs EEPROM', () => {
      const message = badImage(() => check(avr([{ paddr: 0x810000, data: new Uint8Array(4) }]), 'uno'));
      expect(message).toMatch(/^segment 0 loads at 0x00810000\.\.0x00810004 /);
      expect(message).toMatch(/it is EEPROM data \(eeprom\), which no hilbench backend programs/);
    });

    it('rejects firmware for a bigger AVR (flash beyond 32 KiB)', () => {
      expect(badImage(() => check(avr([{ paddr: 0x7f00, data: new Uint8Array(0x200) }]), 'uno'))).toMatch(/loads at 0x00007f00\.\.0x00008100/);
    });
  });
});

describe('the committed example firmware', () => {
  const manifest = loadFirmwareManifest();

  it.each(manifest.firmware.map((f) => [f.path, f] as const))('%s passes the check for its board', (_path, entry) => {
    const image = loadFirmwareImage(readFileSync(firmwarePath(entry)));
    expect(image.sha256).toBe(entry.sha256);
    expect(() => checkImageForBoard(image, board(entry.board))).not.toThrow();
  });

  it('is refused by boards it was not linked for', () => {
    const load = (path: string) => loadFirmwareImage(readFileSync(firmwarePath({ path })));
    expect(badImage(() => checkImageForBoard(load('pico/hello.elf'), board('uno')))).toMatch(/ELF machine ARM \(40\) does not match uno's/);
    expect(badImage(() => checkImageForBoard(load('uno/hello.elf'), board('pico')))).toMatch(/ELF machine AVR \(83\) does not match pico's/);
    expect(badImage(() => checkImageForBoard(load('pico/hello.elf'), board('mps2-an385')))).toMatch(/^segment 0 \(\.text\) loads at 0x10000000\.\./);
    expect(badImage(() => checkImageForBoard(load('netduino2/hello.elf'), board('microbit')))).toMatch(/^segment 0 \(\.text\) loads at 0x08000000\.\./);
    // an505 firmware lives at the Secure aliases; the an385 map has nothing at 0x10000000.
    expect(badImage(() => checkImageForBoard(load('mps2-an505/hello.elf'), board('mps2-an385')))).toMatch(/loads at 0x10000000/);
  });
});

describe('properties', () => {
  const catalog = [...boards.values()];

  it('loadFirmwareImage either parses or throws bad-image, for any bytes (fuzzed from a real image)', () => {
    const seed = readFileSync(firmwarePath({ path: 'uno/hello.elf' }));
    fc.assert(
      fc.property(
        fc.array(fc.record({ at: fc.nat({ max: seed.length - 1 }), value: fc.integer({ min: 0, max: 255 }) }), { maxLength: 12 }),
        fc.nat({ max: seed.length }),
        (mutations, length) => {
          const bytes = Uint8Array.from(seed.subarray(0, Math.max(length, 52)));
          for (const m of mutations) if (m.at < bytes.length) bytes[m.at] = m.value;
          try {
            const image = loadFirmwareImage(bytes);
            // Whatever parsed must also be checkable without anything but a bad-image error.
            try {
              checkImageForBoard(image, board('uno'));
            } catch (err) {
              expect(err).toBeInstanceOf(BackendError);
              expect((err as BackendError).kind).toBe('bad-image');
            }
          } catch (err) {
            expect(err).toBeInstanceOf(BackendError);
            expect((err as BackendError).kind).toBe('bad-image');
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('accepts a one-segment image exactly when both of its ranges lie inside one code or data region', () => {
    const arm = catalog.filter((b) => b.mcu.architecture === 'arm');
    // Addresses near region edges, where mistakes live, plus anywhere at all.
    const address = (b: Board) =>
      fc.oneof(
        fc.constantFrom(...b.mcu.memory.flatMap((r) => [r.start, r.start + r.sizeBytes])).chain((edge) => fc.integer({ min: Math.max(0, edge - 64), max: Math.min(0xffff_ffff, edge + 64) })),
        fc.integer({ min: 0, max: 0xffff_fff0 }),
      );
    const inOne = (b: Board, start: number, sizeBytes: number) =>
      b.mcu.memory.some((r) => r.kind !== 'eeprom' && start >= r.start && start + sizeBytes <= r.start + r.sizeBytes);
    fc.assert(
      fc.property(
        fc.constantFrom(...arm).chain((b) => fc.tuple(fc.constant(b), address(b), address(b), fc.integer({ min: 1, max: 96 }), fc.integer({ min: 0, max: 96 }))),
        ([b, paddr, vaddr, fileSizeBytes, extraBytes]) => {
          const memSizeBytes = fileSizeBytes + extraBytes;
          const image = loadFirmwareImage(makeElf({ segments: [{ paddr, vaddr, data: new Uint8Array(fileSizeBytes), memSizeBytes }] }));
          const fits = inOne(b, paddr, fileSizeBytes) && inOne(b, vaddr, memSizeBytes);
          if (fits) expect(() => checkImageForBoard(image, b)).not.toThrow();
          else expect(badImage(() => checkImageForBoard(image, b))).toMatch(/^segment 0 (loads|runs) at 0x[0-9a-f]{8}\.\.0x[0-9a-f]{8,9} /);
        },
      ),
      { numRuns: 500 },
    );
  });
});
