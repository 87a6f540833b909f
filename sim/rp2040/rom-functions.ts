import type { RomRegisters } from './rom-float.js';

/**
 * The public functions of the project's own RP2040 boot ROM other than the float tables, as
 * TypeScript on the caller's registers and the chip's memory (RP2040 datasheet §2.8.3.1; each
 * function's arguments as documented there). Decision 0251.
 */

/** The chip as a ROM function sees it. */
export interface RomMachine {
  readonly regs: RomRegisters;
  read8(address: number): number;
  read16(address: number): number;
  write8(address: number, value: number): void;
  /** The external flash behind XIP, indexed by flash offset (what the flash functions take). */
  readonly flash: Uint8Array;
}

/** What happens after a ROM function: return to LR (undefined), or something else. */
export type RomOutcome =
  | undefined
  | { kind: 'jump'; pc: number; lr: number }
  | { kind: 'halt'; message: string }
  /** The core sleeps at this address for ever, taking interrupts (WFE in a loop). */
  | { kind: 'wait' };

export interface RomFunction {
  /** Two-letter lookup code (datasheet table of function codes), or undefined for entries only the header or vectors name. */
  code?: string;
  name: string;
  run(machine: RomMachine, self: { entryAddress: (name: string) => number }): RomOutcome;
}

/** Flash sector and page: erase and program granules of the W25Q16 on a Pico (datasheet §2.8.3.1.3). */
const SECTOR_BYTES = 4096;
const PAGE_BYTES = 256;
/** Flash offsets are sent as 24-bit addresses: the ROM functions see only the low 24 bits. */
const FLASH_ADDRESS_MASK = 0xffffff;

const popcount32 = (x: number) => {
  let count = 0;
  for (let v = x >>> 0; v; v >>>= 1) count += v & 1;
  return count;
};
const reverse32 = (x: number) => {
  let result = 0;
  for (let i = 0; i < 32; i++) result = (result << 1) | ((x >>> i) & 1);
  return result >>> 0;
};
const clz32 = (x: number) => Math.clz32(x);
const ctz32 = (x: number) => (x === 0 ? 32 : 31 - Math.clz32((x & -x) >>> 0));

function fill(machine: RomMachine) {
  const [ptr, value, count] = [machine.regs.r[0]!, machine.regs.r[1]! & 0xff, machine.regs.r[2]!];
  for (let i = 0; i < count; i++) machine.write8(ptr + i, value);
  // Returns ptr: r0 is unchanged.
  return undefined;
}

function copy(machine: RomMachine) {
  const [dest, src, count] = [machine.regs.r[0]!, machine.regs.r[1]!, machine.regs.r[2]!];
  for (let i = 0; i < count; i++) machine.write8(dest + i, machine.read8(src + i));
  return undefined;
}

const noop = () => undefined;

/** The functions, in table order. */
export const romFunctions: readonly RomFunction[] = [
  { code: 'P3', name: 'popcount32', run: (m) => void (m.regs.r[0] = popcount32(m.regs.r[0]!)) },
  { code: 'R3', name: 'reverse32', run: (m) => void (m.regs.r[0] = reverse32(m.regs.r[0]!)) },
  { code: 'L3', name: 'clz32', run: (m) => void (m.regs.r[0] = clz32(m.regs.r[0]!)) },
  { code: 'T3', name: 'ctz32', run: (m) => void (m.regs.r[0] = ctz32(m.regs.r[0]!)) },
  { code: 'MS', name: 'memset', run: fill },
  { code: 'S4', name: 'memset4', run: fill },
  { code: 'MC', name: 'memcpy', run: copy },
  { code: 'C4', name: 'memcpy44', run: copy },
  {
    code: 'UB',
    name: 'reset_to_usb_boot',
    run: (m) => ({
      kind: 'halt',
      message:
        `the firmware called the boot ROM's reset_to_usb_boot (gpio_activity_pin_mask 0x${m.regs.r[0]!.toString(16)}, ` +
        `disable_interface_mask 0x${m.regs.r[1]!.toString(16)}): the chip would reboot into USB BOOTSEL mode, which the simulator does not model`,
    }),
  },
  // Calls the function in r7 with r0..r3 and breaks on its return, as the ROM's trampoline does.
  { code: 'DT', name: 'debug_trampoline', run: (m, self) => ({ kind: 'jump', pc: m.regs.r[7]! | 1, lr: self.entryAddress('debug_trampoline_end') | 1 }) },
  { code: 'DE', name: 'debug_trampoline_end', run: () => ({ kind: 'halt', message: 'HardFault: bkpt #0 in the boot ROM debug trampoline with no debugger attached' }) },
  // Core 1's holding pen; on core 0 it waits for ever, as the chip would for a FIFO handshake that never comes.
  { code: 'WV', name: 'wait_for_vector', run: () => ({ kind: 'wait' }) },
  { code: 'IF', name: 'connect_internal_flash', run: noop },
  { code: 'EX', name: 'flash_exit_xip', run: noop },
  {
    code: 'RE',
    name: 'flash_range_erase',
    run: (m) => {
      // addr and count should be sector multiples; like the chip, every sector they touch is erased.
      const start = m.regs.r[0]! & FLASH_ADDRESS_MASK;
      const end = Math.min(start + m.regs.r[1]!, m.flash.length);
      for (let sector = start - (start % SECTOR_BYTES); sector < end; sector += SECTOR_BYTES) {
        m.flash.fill(0xff, sector, Math.min(sector + SECTOR_BYTES, m.flash.length));
      }
      return undefined;
    },
  },
  {
    code: 'RP',
    name: 'flash_range_program',
    run: (m) => {
      const [address, data, count] = [m.regs.r[0]! & FLASH_ADDRESS_MASK, m.regs.r[1]!, m.regs.r[2]!];
      // NOR flash programming only clears bits: programming over unerased bytes ANDs them.
      for (let i = 0; i < count && address + i < m.flash.length; i++) m.flash[address + i]! &= m.read8(data + i);
      return undefined;
    },
  },
  { code: 'FC', name: 'flash_flush_cache', run: noop },
  { code: 'CX', name: 'flash_enter_cmd_xip', run: noop },
];

/** Bytes per erase sector and program page, for tests and docs. */
export const FLASH_GEOMETRY = { sectorBytes: SECTOR_BYTES, pageBytes: PAGE_BYTES } as const;

/** The 8-bit helper tables the data table exposes ('P8', 'R8', 'L8', 'T8'). */
export function bitTables(): Record<'P8' | 'R8' | 'L8' | 'T8', Uint8Array> {
  const make = (fn: (x: number) => number) => Uint8Array.from({ length: 256 }, (_, i) => fn(i));
  return {
    P8: make(popcount32),
    R8: make((x) => reverse32(x) >>> 24),
    // clz and ctz of an 8-bit value; 8 for zero.
    L8: make((x) => clz32(x) - 24),
    T8: make((x) => (x === 0 ? 8 : ctz32(x))),
  };
}
