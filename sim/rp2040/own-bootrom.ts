import { type RomMachine, type RomOutcome, bitTables, romFunctions } from './rom-functions.js';
import { SOFT_TABLE_BYTES, softDoubleTable, softFloatTable, type RomTableFunction } from './rom-float.js';

/**
 * The project's own RP2040 boot ROM (decision 0251): a 16 KiB image whose header, lookup
 * tables and data are laid out as the RP2040 datasheet §2.8 describes, and whose functions are
 * entry points that the engine traps and runs in TypeScript (rom-functions.ts, rom-float.ts).
 *
 * Header (datasheet §2.8.2, "Bootrom Contents"): 0x00 initial SP, 0x04 reset, 0x08 NMI,
 * 0x0c HardFault; 0x10 'M', 'u', 0x01 (magic), 0x13 version; 0x14 function table, 0x16 data
 * table, 0x18 table lookup function (16-bit pointers). Tables are (code, pointer) halfword
 * pairs ending with code 0; a code is `c1 | c2 << 8`.
 */

export const OWN_BOOTROM_BYTES = 0x4000;
/**
 * The version byte at 0x13: 3, as on the B2 ROM, whose float and double tables the SDK uses as
 * they are (for 1 and 2 it patches entries or, in debug builds, checks code at fixed ROM
 * addresses that only the real ROM has).
 */
export const OWN_BOOTROM_VERSION = 3;
const INITIAL_SP = 0x20042000;
const ENTRIES_START = 0x20;
/** `bx lr; nop`: what an entry holds, so that reading ROM code finds instructions, not 0xffff. */
const ENTRY_CODE = 0xbf004770;

/** A trapped entry point. */
export interface RomEntry {
  address: number;
  name: string;
  run(machine: RomMachine): RomOutcome;
}

export const romTableCode = (code: string) => code.charCodeAt(0) | (code.charCodeAt(1) << 8);

/** What the ROM exposes, for tests and docs: function codes, data codes and table addresses. */
export interface OwnBootromLayout {
  functionTable: number;
  dataTable: number;
  lookup: number;
  softFloatTable: number;
  softDoubleTable: number;
  functions: Map<string, number>;
  data: Map<string, number>;
}

class RomWriter {
  readonly bytes = new Uint8Array(OWN_BOOTROM_BYTES);
  readonly view = new DataView(this.bytes.buffer);
  at = 0;
  align(n: number) {
    this.at = Math.ceil(this.at / n) * n;
  }
  u8(v: number) {
    this.bytes[this.at++] = v;
  }
  u16(v: number) {
    this.view.setUint16(this.at, v, true);
    this.at += 2;
  }
  u32(v: number) {
    this.view.setUint32(this.at, v >>> 0, true);
    this.at += 4;
  }
  block(data: Uint8Array) {
    this.bytes.set(data, this.at);
    this.at += data.length;
  }
}

/** The built ROM: its words for rp2040js, and the entry each trapped address runs. */
export class OwnBootrom {
  readonly words: Uint32Array;
  readonly layout: OwnBootromLayout;
  private readonly entries = new Map<number, RomEntry>();
  private readonly byName = new Map<string, number>();

  constructor() {
    const w = new RomWriter();
    w.at = ENTRIES_START;
    const addEntry = (name: string, run: RomEntry['run']) => {
      const address = w.at;
      w.u32(ENTRY_CODE);
      this.entries.set(address, { address, name, run });
      this.byName.set(name, address);
      return address;
    };
    const self = { entryAddress: (name: string) => this.byName.get(name)! };

    const lookup = addEntry('rom_table_lookup', (m) => {
      const [table, code] = [m.regs.r[0]!, m.regs.r[1]! & 0xffff];
      let result = 0;
      for (let at = table; ; at += 4) {
        const entryCode = m.read16(at);
        if (entryCode === 0) break;
        if (entryCode === code) {
          result = m.read16(at + 2);
          break;
        }
      }
      m.regs.r[0] = result;
      return undefined;
    });
    const halt = (message: string) => () => ({ kind: 'halt' as const, message });
    const reset = addEntry('reset', halt('execution entered the boot ROM reset handler: a reset into the ROM is not modelled (the simulator starts images as the ROM leaves them)'));
    const nmi = addEntry('nmi', halt('NMI taken with the boot ROM vector table in place, which the simulator does not model'));
    const hardFault = addEntry('hard_fault', halt('HardFault taken with the boot ROM vector table in place'));
    const functionAddresses = new Map<string, number>();
    for (const fn of romFunctions) {
      const address = addEntry(fn.name, (m) => fn.run(m, self));
      if (fn.code) functionAddresses.set(fn.code, address);
    }
    const fplibStart = w.at;
    const tableEntries = (prefix: string, fns: readonly RomTableFunction[]) =>
      fns.map((fn) => ({ offset: fn.offset, address: addEntry(`${prefix}${fn.name}`, (m) => void fn.run(m.regs)) }));
    const floatEntries = tableEntries('sf:', softFloatTable);
    const doubleEntries = tableEntries('sd:', softDoubleTable);
    const fplibEnd = w.at;

    // Data: the git revision word, the copyright string, the 8-bit tables, then the lookup tables.
    w.align(4);
    const gitRevision = w.at;
    w.u32(0x00000000);
    const copyright = w.at;
    w.block(new TextEncoder().encode('hilbench RP2040 boot ROM (own implementation, see docs/backends/sim.md)\0'));
    const data = new Map<string, number>([
      ['GR', gitRevision],
      ['CR', copyright],
    ]);
    for (const [code, bytes] of Object.entries(bitTables())) {
      data.set(code, w.at);
      w.block(bytes);
    }
    const softTable = (entries: Array<{ offset: number; address: number }>) => {
      // The SDK reads the table's size in words from the byte two before it (float_init_rom.c).
      w.align(4);
      w.at += 2;
      w.u8(SOFT_TABLE_BYTES / 4);
      w.u8(0);
      const start = w.at;
      for (const e of entries) w.view.setUint32(start + e.offset, e.address | 1, true);
      w.at = start + SOFT_TABLE_BYTES;
      return start;
    };
    const sf = softTable(floatEntries);
    const sd = softTable(doubleEntries);
    data.set('SF', sf);
    data.set('SD', sd);
    data.set('FS', fplibStart);
    data.set('FE', fplibEnd);

    w.align(4);
    const functionTable = w.at;
    for (const [code, address] of functionAddresses) {
      w.u16(romTableCode(code));
      w.u16(address | 1);
    }
    w.u16(0);
    w.align(4);
    const dataTable = w.at;
    for (const [code, address] of data) {
      w.u16(romTableCode(code));
      // Data pointers are plain addresses; function pointers carry the Thumb bit.
      w.u16(address);
    }
    w.u16(0);
    if (w.at > OWN_BOOTROM_BYTES) throw new Error(`the own boot ROM image is ${w.at} bytes, more than ${OWN_BOOTROM_BYTES}`);

    w.view.setUint32(0x00, INITIAL_SP, true);
    w.view.setUint32(0x04, reset | 1, true);
    w.view.setUint32(0x08, nmi | 1, true);
    w.view.setUint32(0x0c, hardFault | 1, true);
    w.bytes.set([0x4d, 0x75, 0x01, OWN_BOOTROM_VERSION], 0x10);
    w.view.setUint16(0x14, functionTable, true);
    w.view.setUint16(0x16, dataTable, true);
    w.view.setUint16(0x18, lookup | 1, true);

    this.words = new Uint32Array(w.bytes.buffer);
    this.layout = { functionTable, dataTable, lookup, softFloatTable: sf, softDoubleTable: sd, functions: functionAddresses, data };
  }

  /** The function whose entry is `pc` (Thumb bit clear), if any. */
  entryAt(pc: number): RomEntry | undefined {
    return this.entries.get(pc);
  }
}
