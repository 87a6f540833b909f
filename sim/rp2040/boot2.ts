import type { ElfFile } from '../../core/elf.js';

/** The boot2 stage: the first 256 bytes of flash, the last 4 of them its CRC (RP2040 datasheet §2.8.1.3). */
export const BOOT2_BYTES = 256;
const BOOT2_CHECKED_BYTES = BOOT2_BYTES - 4;
/** Where boot2 leaves the core: the image's own vector table right after the boot2 stage. */
export const BOOT2_VECTOR_TABLE = 0x10000100;

const CRC32_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 24;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x80000000 ? (crc << 1) ^ 0x04c11db7 : crc << 1;
    table[i] = crc >>> 0;
  }
  return table;
})();

/**
 * The CRC the boot ROM checks boot2 with: CRC-32 with polynomial 0x04c11db7, initial value
 * 0xffffffff, bits not reflected, no final XOR (the "CRC-32/MPEG-2" parameters; check value
 * 0x0376e6e7 for "123456789"). The Pico SDK's pad_checksum script computes the same.
 */
export function boot2Crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = ((crc << 8) ^ CRC32_TABLE[((crc >>> 24) ^ byte) & 0xff]!) >>> 0;
  return crc >>> 0;
}

/** What the ROM would find in the first 256 bytes of flash. */
export interface Boot2Check {
  /** The CRC stored in bytes 252..255 (little endian). */
  storedCrc: number;
  /** The CRC of bytes 0..251. */
  computedCrc: number;
  valid: boolean;
}

/** Checks the boot2 stage at the start of `flash` as the boot ROM does before it runs it. */
export function checkBoot2(flash: Uint8Array): Boot2Check {
  const view = new DataView(flash.buffer, flash.byteOffset, BOOT2_BYTES);
  const storedCrc = view.getUint32(BOOT2_CHECKED_BYTES, true);
  const computedCrc = boot2Crc32(flash.subarray(0, BOOT2_CHECKED_BYTES));
  return { storedCrc, computedCrc, valid: storedCrc === computedCrc };
}

/** Names that mark a boot2 stage: the SDK's and Rust's `.boot2` section and the SDK's symbols around it. */
const boot2Symbols = new Set(['__boot2_start__', '__boot2_end__', 'boot2_padded_checksummed', 'BOOT2_FIRMWARE']);

/**
 * Whether an RP2040 image starts with a boot2 stage rather than a vector table: a `.boot2`
 * section (Pico SDK, arduino-pico, MicroPython, rp2040-boot2 for Rust) or the SDK's boot2 symbols.
 */
export function hasBoot2Stage(elf: ElfFile): boolean {
  return elf.sections.some((s) => s.name === '.boot2') || elf.symbols.some((s) => boot2Symbols.has(s.name));
}
