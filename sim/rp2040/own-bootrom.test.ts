import { describe, expect, it } from 'vitest';
import { OwnBootrom, OWN_BOOTROM_BYTES, romTableCode } from './own-bootrom.js';

const rom = new OwnBootrom();
const bytes = new Uint8Array(rom.words.buffer);
const view = new DataView(rom.words.buffer);
const u16 = (at: number) => view.getUint16(at, true);

/** Walks a (code, pointer) table as the datasheet describes the lookup function. */
function lookup(table: number, code: string): number {
  for (let at = table; u16(at) !== 0; at += 4) if (u16(at) === romTableCode(code)) return u16(at + 2);
  return 0;
}

describe('the own RP2040 boot ROM image', () => {
  it('has the datasheet header: vectors, magic "Mu" 1, version, and 16-bit table and lookup pointers', () => {
    expect(rom.words.length * 4).toBe(OWN_BOOTROM_BYTES);
    expect(view.getUint32(0, true)).toBe(0x20042000);
    expect(view.getUint32(4, true) & 1).toBe(1);
    expect([...bytes.subarray(0x10, 0x14)]).toEqual([0x4d, 0x75, 0x01, 3]);
    expect(u16(0x14)).toBe(rom.layout.functionTable);
    expect(u16(0x16)).toBe(rom.layout.dataTable);
    expect(u16(0x18)).toBe(rom.layout.lookup | 1);
    expect(rom.entryAt(rom.layout.lookup)?.name).toBe('rom_table_lookup');
  });

  it('lists every public function code, each pointing (Thumb bit set) at a trapped entry', () => {
    const codes = ['P3', 'R3', 'L3', 'T3', 'MS', 'S4', 'MC', 'C4', 'UB', 'DT', 'DE', 'WV', 'IF', 'EX', 'RE', 'RP', 'FC', 'CX'];
    for (const code of codes) {
      const pointer = lookup(rom.layout.functionTable, code);
      expect(pointer & 1, code).toBe(1);
      expect(rom.entryAt(pointer & ~1), code).toBeDefined();
    }
    expect(lookup(rom.layout.functionTable, 'ZZ')).toBe(0);
  });

  it('lists the data: copyright, git revision, the 8-bit tables and the soft float and double tables with their size byte', () => {
    const copyright = lookup(rom.layout.dataTable, 'CR');
    expect(new TextDecoder().decode(bytes.subarray(copyright, bytes.indexOf(0, copyright)))).toMatch(/hilbench/);
    expect(bytes[lookup(rom.layout.dataTable, 'P8') + 0xff]).toBe(8);
    expect(bytes[lookup(rom.layout.dataTable, 'L8') + 1]).toBe(7);
    for (const code of ['SF', 'SD']) {
      const table = lookup(rom.layout.dataTable, code);
      expect(bytes[table - 2], code).toBe(0x80 / 4);
      for (let offset = 0; offset < 0x80; offset += 4) expect(rom.entryAt(view.getUint32(table + offset, true) & ~1), `${code} +${offset}`).toBeDefined();
    }
    expect(lookup(rom.layout.dataTable, 'FS')).toBeLessThan(lookup(rom.layout.dataTable, 'FE'));
  });
});
