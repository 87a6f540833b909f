import { describe, expect, it } from 'vitest';
import { EM_ARM } from '../core/elf.js';
import { parseRp2040Bootrom, RP2040_BOOTROM_HINT } from './rp2040-bootrom.js';
import { SimError } from './sim-error.js';
import { elfImage } from '../test/support/sim-programs.js';

/** The first bytes of a boot ROM: initial SP 0x20041f00, reset handler 0xeb (Thumb). */
const romStart = Uint8Array.from([0x00, 0x1f, 0x04, 0x20, 0xeb, 0x00, 0x00, 0x00]);

describe('RP2040_BOOTROM_HINT', () => {
  it('names every way to supply the bootrom: the CLI flag, the environment variable and the backend option', () => {
    expect(RP2040_BOOTROM_HINT).toContain('hilbench serve --rp2040-bootrom <file>');
    expect(RP2040_BOOTROM_HINT).toContain('HILBENCH_RP2040_BOOTROM');
    expect(RP2040_BOOTROM_HINT).toContain('rp2040BootromPath');
  });
});

describe('parseRp2040Bootrom', () => {
  it('takes a raw image of at most 16 KiB, padding it to 16 KiB of words', () => {
    const words = parseRp2040Bootrom(romStart, 'b1.bin');
    expect(words.length).toBe(0x1000);
    expect(words[0]).toBe(0x20041f00);
    expect(words[1]).toBe(0xeb);
  });

  it('takes an ELF whose segments lie in the ROM', () => {
    const rom = elfImage(EM_ARM, [{ paddr: 0, data: romStart }]);
    expect(parseRp2040Bootrom(rom.bytes, 'b1.elf')[0]).toBe(0x20041f00);
  });

  it('refuses files that are not a boot ROM as unavailable, saying where to get one', () => {
    const cases: Array<[Uint8Array, RegExp]> = [
      [new Uint8Array(0x4001), /16385 bytes; a raw RP2040 bootrom is at most 16384/],
      [new Uint8Array(64), /does not start with a vector table/],
      [elfImage(EM_ARM, [{ paddr: 0x10000000, data: romStart }]).bytes, /outside the memory/],
    ];
    for (const [bytes, reason] of cases) {
      const error = (() => {
        try {
          parseRp2040Bootrom(bytes, 'rom.bin');
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(SimError);
      expect((error as SimError).kind).toBe('unavailable');
      expect((error as SimError).message).toMatch(reason);
      expect((error as SimError).message).toMatch(/raspberrypi\/pico-bootrom/);
    }
  });
});
