import { readFileSync } from 'node:fs';
import { parseElf } from '../core/elf.js';
import { loadSegments } from './load-segments.js';
import { SimError } from './sim-error.js';

/** The RP2040 boot ROM is 16 KiB at address 0 (RP2040 datasheet §2.8). */
export const RP2040_BOOTROM_BYTES = 0x4000;

/** Environment variable naming the bootrom file when no backend option does. */
export const RP2040_BOOTROM_ENV = 'HILBENCH_RP2040_BOOTROM';

/** Where users get the bootrom; repeated in every message that asks for it. */
export const RP2040_BOOTROM_HINT =
  `supply the RP2040 B1 boot ROM (16 KiB, BSD-3-Clause, built from github.com/raspberrypi/pico-bootrom at tag b1, or dumped from a B1 chip) ` +
  `with \`hilbench serve --rp2040-bootrom <file>\`, the environment variable ${RP2040_BOOTROM_ENV} or the sim backend option rp2040BootromPath (a raw .bin or the .elf)`;

/**
 * Reads a bootrom file: a raw binary of at most 16 KiB, or an ELF whose segments lie in the
 * ROM. Checks that it starts with a vector table (initial SP in SRAM, Thumb reset handler in
 * ROM), so a wrong file fails here rather than as a mysterious hang. Throws `SimError('unavailable')`.
 */
export function readRp2040Bootrom(path: string): Uint32Array {
  let raw: Uint8Array;
  try {
    raw = readFileSync(path);
  } catch (err) {
    throw new SimError('unavailable', `cannot read the RP2040 bootrom file ${path}: ${(err as Error).message}; ${RP2040_BOOTROM_HINT}`, {
      cause: err,
    });
  }
  return parseRp2040Bootrom(raw, path);
}

/** Parses bootrom bytes (raw or ELF) into the 32-bit words rp2040js's `loadBootrom` takes. */
export function parseRp2040Bootrom(raw: Uint8Array, name: string): Uint32Array {
  const rom = new Uint8Array(RP2040_BOOTROM_BYTES);
  const isElf = raw.length >= 4 && raw[0] === 0x7f && raw[1] === 0x45 && raw[2] === 0x4c && raw[3] === 0x46;
  try {
    if (isElf) {
      loadSegments({ bytes: raw, elf: parseElf(raw) }, [{ name: 'bootrom', start: 0, bytes: rom }]);
    } else {
      if (raw.length === 0 || raw.length > RP2040_BOOTROM_BYTES) {
        throw new SimError('unavailable', `it is ${raw.length} bytes; a raw RP2040 bootrom is at most ${RP2040_BOOTROM_BYTES}`);
      }
      rom.set(raw);
    }
  } catch (err) {
    throw new SimError('unavailable', `${name} is not a usable RP2040 bootrom: ${(err as Error).message}; ${RP2040_BOOTROM_HINT}`, { cause: err });
  }
  const view = new DataView(rom.buffer);
  const sp = view.getUint32(0, true);
  const reset = view.getUint32(4, true);
  if (sp < 0x20000000 || sp > 0x20042000 || (reset & 1) === 0 || reset >= RP2040_BOOTROM_BYTES) {
    throw new SimError(
      'unavailable',
      `${name} is not an RP2040 bootrom: it does not start with a vector table (initial SP 0x${sp.toString(16)}, reset 0x${reset.toString(16)}); ${RP2040_BOOTROM_HINT}`,
    );
  }
  return new Uint32Array(rom.buffer);
}
