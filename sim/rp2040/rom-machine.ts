import type { RP2040 } from 'rp2040js';
import type { RomMachine } from './rom-functions.js';

type Core = RP2040['core'];

/**
 * The registers and memory the own ROM's functions see when `core` of `chip` calls them: r0..r3
 * and the flags of that core, bytes and halfwords through the chip's bus, the flash array.
 */
export function romMachineFor(chip: RP2040, core: Core): RomMachine {
  return {
    regs: {
      r: core.registers,
      setFlags: ({ n, z, c, v }) => {
        core.N = n;
        core.Z = z;
        core.C = c;
        core.V = v;
      },
    },
    read8: (address) => chip.readUint8(address >>> 0),
    read16: (address) => chip.readUint16(address >>> 0),
    write8: (address, value) => chip.writeUint8(address >>> 0, value),
    flash: chip.flash,
  };
}
