import { describe, expect, it } from 'vitest';
import { boot2Crc32, checkBoot2 } from './boot2.js';

describe('boot2Crc32', () => {
  it('is CRC-32/MPEG-2: check value 0x0376e6e7 for "123456789", 0xffffffff for nothing', () => {
    expect(boot2Crc32(new TextEncoder().encode('123456789'))).toBe(0x0376e6e7);
    expect(boot2Crc32(new Uint8Array(0))).toBe(0xffffffff);
  });
});

describe('checkBoot2', () => {
  it('accepts 256 bytes whose last word is the CRC of the first 252, and nothing else', () => {
    const flash = new Uint8Array(0x200).fill(0x5a);
    new DataView(flash.buffer).setUint32(252, boot2Crc32(flash.subarray(0, 252)), true);
    expect(checkBoot2(flash).valid).toBe(true);
    // The bytes after boot2 are not covered.
    flash[256] = 0;
    expect(checkBoot2(flash).valid).toBe(true);
    flash[17]! ^= 1;
    const bad = checkBoot2(flash);
    expect(bad.valid).toBe(false);
    expect(bad.computedCrc).toBe(boot2Crc32(flash.subarray(0, 252)));
    expect(bad.storedCrc).not.toBe(bad.computedCrc);
  });
});
