import type { RP2040 } from 'rp2040js';
import { RP2040_BOOTROM_HINT } from '../rp2040-bootrom.js';
import { SimError } from '../sim-error.js';
import { hex } from './core-faults.js';
import type { CoreIndex } from './inter-core-fifo.js';
import type { OwnBootrom } from './own-bootrom.js';
import type { RomMachine } from './rom-functions.js';
import { romMachineFor } from './rom-machine.js';

type Core = RP2040['core'];

/** Core cycles charged for one call into the own boot ROM (its functions run in TypeScript: not the ROM's timing). */
export const ROM_CALL_CYCLES = 20;
const CORE1 = ' on core 1';

export interface OwnRomCallsOptions {
  /** A ROM function that stops the chip (reset_to_usb_boot, debug_trampoline_end). */
  onHalt(message: string): void;
  /** wait_for_vector on core 1: its holding pen (also where a launched entry returns to). */
  enterPen(): void;
}

/**
 * Calls into the project's own boot ROM (decision 0251), from either core: the function whose
 * entry the core's PC is at runs in TypeScript on that core's registers, then the core returns
 * to LR, as if the call had executed.
 */
export class OwnRomCalls {
  private readonly core0Machine: RomMachine;
  /** Core 1's view, rebuilt when a reset of core 1 replaces its core. */
  private core1Machine: { core: Core; machine: RomMachine } | undefined;

  constructor(
    private readonly rom: OwnBootrom,
    private readonly chip: RP2040,
    private readonly options: OwnRomCallsOptions,
  ) {
    this.core0Machine = romMachineFor(chip, chip.core);
  }

  /** Runs the ROM function core `index` is at; returns the cycles charged. */
  call(core: Core, index: CoreIndex): number {
    const entry = this.rom.entryAt(core.PC);
    if (!entry) {
      throw new SimError(
        'bad-image',
        `execution${index === 1 ? CORE1 : ''} reached ${hex(core.PC)} in the boot ROM, which is not the entry of a function the simulator's own boot ROM provides ` +
          `(docs/backends/sim.md lists them; firmware that jumps into the ROM's internals needs the real one: ${RP2040_BOOTROM_HINT}); ` +
          `bare-metal firmware gets here only through a null or bad function pointer`,
      );
    }
    const outcome = entry.run(index === 0 ? this.core0Machine : this.machineOfCore1(core));
    if (outcome === undefined) core.BXWritePC(core.LR);
    else if (outcome.kind === 'jump') {
      core.LR = outcome.lr;
      core.PC = outcome.pc & ~1;
    } else if (outcome.kind === 'halt') {
      this.options.onHalt(index === 1 ? `${outcome.message}${CORE1}` : outcome.message);
    } else if (index === 1) {
      this.options.enterPen();
    } else {
      // Stays at this address; an interrupt wakes the core, and its return lands here again.
      core.waiting = true;
    }
    return ROM_CALL_CYCLES;
  }

  private machineOfCore1(core: Core): RomMachine {
    if (this.core1Machine?.core !== core) this.core1Machine = { core, machine: romMachineFor(this.chip, core) };
    return this.core1Machine.machine;
  }
}
