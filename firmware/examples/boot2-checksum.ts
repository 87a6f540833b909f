/**
 * Writes the boot2 CRC into a linked RP2040 ELF, as the Pico SDK's pad_checksum step does: the
 * last 4 bytes of the 256-byte boot2 stage at 0x10000000 become the CRC32 of the first 252
 * (sim/rp2040/boot2.ts has the algorithm). build.sh runs it after linking:
 *
 *   npx tsx firmware/examples/boot2-checksum.ts <file.elf>
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { loadableSegments, parseElf } from '../../core/elf.js';
import { BOOT2_BYTES, boot2Crc32 } from '../../sim/rp2040/boot2.js';

const FLASH_START = 0x10000000;
const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: boot2-checksum.ts <file.elf>\n');
  process.exit(2);
}
const bytes = new Uint8Array(readFileSync(file));
const segment = loadableSegments(parseElf(bytes)).find((s) => s.paddr === FLASH_START && s.fileSizeBytes >= BOOT2_BYTES);
if (!segment) {
  process.stderr.write(`${file}: no loadable segment with the ${BOOT2_BYTES}-byte boot2 stage at 0x${FLASH_START.toString(16)}\n`);
  process.exit(1);
}
const crc = boot2Crc32(bytes.subarray(segment.offset, segment.offset + BOOT2_BYTES - 4));
new DataView(bytes.buffer).setUint32(segment.offset + BOOT2_BYTES - 4, crc, true);
writeFileSync(file, bytes);
process.stdout.write(`${file}: boot2 CRC32 0x${crc.toString(16).padStart(8, '0')}\n`);
