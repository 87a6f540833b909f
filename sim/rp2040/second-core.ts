import type { Logger, RP2040 } from 'rp2040js';
import { type InterCoreFifo, SIO_FIFO_RD, SIO_FIFO_ST, SIO_FIFO_WR } from './inter-core-fifo.js';

/**
 * Core 1 of the RP2040 (decision 0526): a second rp2040js Cortex-M0+ core on the same chip.
 *
 * rp2040js builds one `CortexM0Core` on its `RP2040` and lets it reach memory through that
 * object's `readUint32`, `writeUint32` and the 8/16-bit variants, `onBreak` and `logger`. Core 1
 * is built from the same class (its constructor, taken from core 0: the package exports the
 * chip, not the core class) on a `CoreOneBus` that offers exactly those members. The bus passes
 * every access to the chip, except the two regions that are private to each core on the chip:
 * SIO at 0xd0000000 (CPUID reads 1; core 1's side of the FIFOs; its own divider and
 * interpolators, held by a second rp2040js `RPSIO`; GPIO and the 32 spinlocks go to the chip's
 * SIO, which both cores share) and the Cortex-M0+ private peripheral bus at 0xe000e000 (its own
 * NVIC, SysTick, VTOR: a second rp2040js `RPPPB` built on the bus). The chip's other
 * peripherals raise their interrupts on both cores (the engine routes `setInterrupt`).
 *
 * From reset core 1 waits in the boot ROM for the launch sequence over the FIFO (datasheet
 * §2.8.2): the ROM empties its read FIFO, writes a 0 to tell core 0 it is there, then echoes
 * every word it reads; after 0, 0, 1 it takes the vector table, the stack pointer and the entry,
 * and jumps there. The holding pen is modelled here, not run as ROM code; it costs nothing while
 * its FIFO is empty.
 */

type Core = RP2040['core'];
type Ppb = RP2040['ppb'];
type Sio = RP2040['sio'];

/** The words that open a launch (datasheet §2.8.2); the vector table, SP and entry follow. */
const LAUNCH_PREAMBLE = [0, 0, 1] as const;
const LAUNCH_WORDS = LAUNCH_PREAMBLE.length + 3;
/** Core cycles the holding pen spends on one FIFO word (read, echo, compare): an estimate, not the ROM's timing. */
export const PEN_CYCLES_PER_WORD = 20;

const SIO_START = 0xd0000000;
const SIO_CPUID = 0x000;
/** The divider (0x60..0x78) and both interpolators (0x80..0xfc) are per core. */
const SIO_PER_CORE_START = 0x060;
const SIO_PER_CORE_END = 0x100;
const PPB_PAGE = 0xe000e;
const SYST_CSR = 0x010;

/** Where core 1 is. */
export type SecondCoreState =
  /** Held in reset by PSM FRCE_OFF.proc1. */
  | 'off'
  /** In the boot ROM's holding pen, waiting for a launch. */
  | 'pen'
  /** Running code it was launched into. */
  | 'running';

export interface SecondCoreOptions {
  fifo: InterCoreFifo;
  /** Core 1's logger: rp2040js reports SEV, faults and unmodelled accesses through it. */
  logger: Logger;
  onBreak(code: number): void;
  /** LR at launch: where the entry returns to (the own ROM's wait_for_vector, back into the pen). */
  returnAddress: number;
  /** A launch the chip would fault on (an entry without the Thumb bit). */
  onLaunchFault(message: string): void;
}

/** The chip as core 1, its PPB and its SIO see it. */
class CoreOneBus {
  core!: Core;
  ppb!: Ppb;
  sio!: Sio;
  onBreak: (code: number) => void;

  constructor(
    private readonly chip: RP2040,
    private readonly owner: SecondCore,
    readonly logger: Logger,
    onBreak: (code: number) => void,
  ) {
    this.onBreak = onBreak;
  }

  /** For the SysTick timer of core 1's PPB. */
  get clock(): RP2040['clock'] {
    return this.chip.clock;
  }

  get clkSys(): number {
    return this.chip.clkSys;
  }

  readUint32(address: number): number {
    return address >= SIO_START ? this.readPrivate(address >>> 0) : this.chip.readUint32(address);
  }

  readUint16(address: number): number {
    if (address < SIO_START) return this.chip.readUint16(address);
    const word = this.readPrivate((address & ~3) >>> 0);
    return address & 2 ? word >>> 16 : word & 0xffff;
  }

  readUint8(address: number): number {
    if (address < SIO_START) return this.chip.readUint8(address);
    return (this.readPrivate((address & ~3) >>> 0) >>> ((address & 3) * 8)) & 0xff;
  }

  writeUint32(address: number, value: number): void {
    if (address >= SIO_START) this.writePrivate(address >>> 0, value);
    else this.chip.writeUint32(address, value);
  }

  // Narrow writes to SIO and the PPB are read-modify-write of the word, as rp2040js does for core 0.
  writeUint16(address: number, value: number): void {
    if (address < SIO_START) return this.chip.writeUint16(address, value);
    const aligned = (address & ~3) >>> 0;
    const shift = (address & 2) * 8;
    this.writePrivate(aligned, (this.readPrivate(aligned) & ~(0xffff << shift)) | ((value & 0xffff) << shift));
  }

  writeUint8(address: number, value: number): void {
    if (address < SIO_START) return this.chip.writeUint8(address, value);
    const aligned = (address & ~3) >>> 0;
    const shift = (address & 3) * 8;
    this.writePrivate(aligned, (this.readPrivate(aligned) & ~(0xff << shift)) | ((value & 0xff) << shift));
  }

  private readPrivate(address: number): number {
    if (address >>> 28 === 0xd) return this.readSio(address - SIO_START);
    if (address >>> 12 === PPB_PAGE) return this.ppb.readUint32(address & 0xfff);
    return this.chip.readUint32(address);
  }

  private writePrivate(address: number, value: number): void {
    if (address >>> 28 === 0xd) this.writeSio(address - SIO_START, value);
    else if (address >>> 12 === PPB_PAGE) this.ppb.writeUint32(address & 0xfff, value);
    else this.chip.writeUint32(address, value);
  }

  private readSio(offset: number): number {
    if (offset === SIO_CPUID) return 1;
    if (offset === SIO_FIFO_ST) return this.owner.fifo.status(1);
    if (offset === SIO_FIFO_RD) return this.owner.fifo.read(1);
    if (offset >= SIO_PER_CORE_START && offset < SIO_PER_CORE_END) return this.sio.readUint32(offset);
    return this.chip.sio.readUint32(offset);
  }

  private writeSio(offset: number, value: number): void {
    if (offset === SIO_FIFO_ST) this.owner.fifo.clearSticky(1, value);
    else if (offset === SIO_FIFO_WR) this.owner.fifo.write(1, value);
    else if (offset >= SIO_PER_CORE_START && offset < SIO_PER_CORE_END) this.sio.writeUint32(offset, value);
    else this.chip.sio.writeUint32(offset, value);
  }
}

export class SecondCore {
  state: SecondCoreState = 'pen';
  /** Core 1's own simulated time; it trails the chip's clock by at most one quantum (the engine's loop). */
  nanos = 0;
  readonly fifo: InterCoreFifo;
  private readonly bus: CoreOneBus;
  private launchIndex = 0;
  private readonly launchWords: number[] = [];

  constructor(
    private readonly chip: RP2040,
    private readonly options: SecondCoreOptions,
  ) {
    this.fifo = options.fifo;
    this.bus = new CoreOneBus(chip, this, options.logger, options.onBreak);
    this.build();
    this.enterPen();
  }

  /** Core 1's rp2040js core (replaced when core 1 is reset). */
  get core(): Core {
    return this.bus.core;
  }

  /** True when core 1 has work: an instruction to run, or a FIFO word for the holding pen. */
  get runnable(): boolean {
    if (this.state === 'running') return !this.bus.core.waiting;
    return this.state === 'pen' && this.fifo.pending(1) > 0;
  }

  /** True in the pen with nothing to read: core 1 costs nothing until core 0 writes to the FIFO. */
  get parked(): boolean {
    return this.state === 'off' || (this.state === 'pen' && this.fifo.pending(1) === 0);
  }

  /** The holding pen's work for one FIFO word; returns the cycles it took. */
  penStep(): number {
    const word = this.fifo.read(1);
    this.fifo.write(1, word);
    if (this.launchIndex < LAUNCH_PREAMBLE.length) {
      // A wrong word restarts the sequence; a 0 may already be its first word.
      if (word === LAUNCH_PREAMBLE[this.launchIndex]) this.launchIndex++;
      else this.launchIndex = word === 0 ? 1 : 0;
      return PEN_CYCLES_PER_WORD;
    }
    this.launchWords.push(word);
    if (++this.launchIndex === LAUNCH_WORDS) this.launch();
    return PEN_CYCLES_PER_WORD;
  }

  /** PSM FRCE_OFF.proc1 set: core 1 stops where it is. */
  powerOff(): void {
    if (this.state === 'off') return;
    this.state = 'off';
    this.bus.ppb.writeUint32(SYST_CSR, 0);
  }

  /** PSM FRCE_OFF.proc1 cleared: core 1 starts from reset, into the boot ROM's holding pen. */
  powerOn(): void {
    if (this.state !== 'off') return;
    this.build();
    this.enterPen();
  }

  /** Back into the holding pen (from reset, or when the launched entry returns to the ROM). */
  enterPen(): void {
    this.state = 'pen';
    this.launchIndex = 0;
    this.launchWords.length = 0;
    this.nanos = this.chip.clock.nanos;
    // What the ROM does first (as the Pico SDK's multicore_reset_core1 describes it): empty its FIFO, then write a 0 to core 0.
    this.fifo.drain(1);
    this.fifo.write(1, 0);
  }

  /** A fresh core, PPB and divider/interpolators: core 1's state at reset. */
  private build() {
    const CoreClass = this.chip.core.constructor as new (chip: RP2040) => Core;
    const PpbClass = this.chip.ppb.constructor as new (chip: RP2040, name: string) => Ppb;
    const SioClass = this.chip.sio.constructor as new (chip: RP2040) => Sio;
    // The bus offers what the three read of their chip (memory, onBreak, logger, clock, clkSys, core).
    const asChip = this.bus as unknown as RP2040;
    this.bus.core = new CoreClass(asChip);
    this.bus.ppb = new PpbClass(asChip, 'PPB (core 1)');
    this.bus.sio = new SioClass(asChip);
  }

  private launch() {
    const [vectorTable, stackPointer, entry] = this.launchWords as [number, number, number];
    const core = this.bus.core;
    this.state = 'running';
    this.nanos = this.chip.clock.nanos;
    core.VTOR = vectorTable;
    core.SP = stackPointer;
    core.LR = this.options.returnAddress;
    core.PC = entry & ~1;
    if ((entry & 1) === 0) {
      this.options.onLaunchFault(
        `HardFault on core 1: it was launched at 0x${entry.toString(16).padStart(8, '0')} without the Thumb bit set; the boot ROM's branch there faults on a Cortex-M0+`,
      );
    }
  }

  /** Keeps core 1's SysTick on clk_sys when the firmware changes it. */
  clockChanged(clkSys: number): void {
    this.bus.ppb.systickTimer.frequency = clkSys;
  }
}
