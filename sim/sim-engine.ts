import type { ElfFile } from '../core/elf.js';
import type { SimGdbIo, SimGdbTarget } from './sim-gdb-target.js';
import type { EnginePins } from './sim-pins.js';

/**
 * What every simulation engine (RP2040 on rp2040js, ATmega328P on avr8js) offers the run loop
 * (`runEngine`). An engine owns one freshly reset chip with the firmware loaded; resetting the
 * device or flashing it again puts that chip back (`reset`, `reflash`), or builds a new engine
 * where the engine cannot.
 */

/** The firmware bytes and their parsed ELF; the sim layer does not know `FirmwareImage`. */
export interface SimImage {
  readonly bytes: Uint8Array;
  readonly elf: ElfFile;
}

/** Why the chip stopped executing on its own. */
export type EngineHalt = { reason: 'exited'; exitCode: number } | { reason: 'crashed'; message: string };

/** A run of UART bytes the firmware sent; `atNanos` is the simulated time of the first byte. */
export interface EngineUartChunk {
  atNanos: number;
  bytes: Uint8Array;
}

export interface SimEngine {
  /** The core clock now, in hertz (firmware may change it: the RP2040 resets at 125 MHz in rp2040js). */
  readonly clockHz: number;
  /** Simulated nanoseconds since reset release. */
  readonly nanos: number;
  /** Instructions executed since reset release. */
  readonly instructions: number;
  /** Simulated nanoseconds skipped while the core slept (WFI/WFE, AVR SLEEP) instead of spinning. */
  readonly sleptNanos: number;
  /**
   * True when the core sleeps and nothing is scheduled that could wake it (no timer alarm, no
   * UART byte on its way): time can jump straight to the end of the run.
   */
  readonly asleepForever: boolean;
  /**
   * Executes until simulated time reaches `targetNanos`, the firmware halts (returned), or UART
   * output is ready to hand out (`takeUartOutput`), whichever comes first.
   */
  advance(targetNanos: number): EngineHalt | undefined;
  /** The next finished run of UART output, if any (a line, a full buffer, or what is left at a slice end). */
  takeUartOutput(options: { partial: boolean }): EngineUartChunk | undefined;
  /** Queues bytes for the firmware's UART receiver; they arrive one character time apart. */
  queueUartInput(bytes: Uint8Array): void;
  /** Received bytes the firmware lost (receiver full or disabled), plus bytes still queued at reset. */
  readonly droppedRxBytes: number;
  /** Bytes queued for the receiver that have not arrived yet. */
  readonly pendingRxBytes: number;
  /** The chip's GPIO pins. */
  readonly pins: EnginePins;
  /**
   * Optional: a GDB stub for this chip (sim/sim-gdb-target.ts), RSP text in and out. Build it on a
   * fresh engine (held at reset release); the stub drives `advance` until it ends.
   */
  openGdb?(io: SimGdbIo): SimGdbTarget;
  /**
   * Optional: returns the chip to the state it was built in (image loaded, held at reset release),
   * reusing its memories; counters start again from 0. Without it a reset builds a new engine.
   */
  reset?(): void;
  /**
   * Optional: another image on the same chip, left as a new engine with that image would be;
   * counters start again from 0. A refused image throws `SimError('bad-image')` and changes
   * nothing, the chip's state and its image included. Without it a flash builds a new engine.
   */
  reflash?(image: SimImage): void;
}

/** Reports accesses the simulator does not model; called once per distinct message with its running count. */
export type UnmodelledListener = (message: string, count: number) => void;
