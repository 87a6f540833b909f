import type { Board } from '../../boards/board-schema.js';
import type { Clock } from '../../core/clock.js';
import { AvrEngine } from '../../sim/avr-engine.js';
import { readRp2040Bootrom } from '../../sim/rp2040-bootrom.js';
import { Rp2040Engine } from '../../sim/rp2040-engine.js';
import type { SimEngine, SimImage, UnmodelledListener } from '../../sim/sim-engine.js';
import { SimError } from '../../sim/sim-error.js';
import { ATMEGA328P_PIN_NAMES, RP2040_PIN_NAMES } from '../../sim/sim-pins.js';
import { pinNamesOf } from '../../core/pins.js';
import { type Availability, type Backend, BackendError, type Device } from '../backend.js';
import { SimDevice } from './sim-device.js';

export interface SimBackendOptions {
  /** The RP2040 B1 boot ROM (raw .bin or .elf), for Pico SDK images (bin/ fills it from --rp2040-bootrom or HILBENCH_RP2040_BOOTROM). */
  rp2040BootromPath?: string;
  /** Host clock for the `stats.hostMs` of devices (injected: the system clock in production). */
  clock: Clock;
  /** Simulated nanoseconds between yields to the event loop; default 1 ms. */
  sliceNanos?: number;
  /** How a run lets the host event loop in between slices; default `setImmediate`. */
  yieldToHost?: () => Promise<void>;
  /**
   * Called for every access the simulator does not model (an unimplemented register), with the
   * running count per message. Default: a `console.warn` the first time each message is seen.
   * Tests pass a function that throws or collects.
   */
  onUnmodelled?: UnmodelledListener;
}

const warnOnce: UnmodelledListener = (message, count) => {
  if (count === 1) console.warn(`hilbench sim: not modelled: ${message}`);
};

/**
 * The `sim` backend: runs firmware on simulated chips in this process, in pure TypeScript:
 * RP2040 boards on rp2040js, ATmega328P boards on avr8js (`backends.sim.engine` in the board
 * file). Time is simulated. See docs/backends/sim.md.
 */
export class SimBackend implements Backend {
  readonly name = 'sim' as const;
  private readonly bootromPath: string | undefined;
  private bootrom: Uint32Array | undefined;

  constructor(private readonly options: SimBackendOptions) {
    this.bootromPath = options.rp2040BootromPath;
  }

  async availability(board: Board): Promise<Availability> {
    try {
      this.engineFactory(board);
      return { available: true };
    } catch (err) {
      return { available: false, reason: (err as Error).message };
    }
  }

  async open(board: Board, options: { signal?: AbortSignal } = {}): Promise<Device> {
    if (options.signal?.aborted) throw new BackendError('cancelled', `opening ${board.id} cancelled`, { cause: options.signal.reason });
    let createEngine: (image: SimImage) => SimEngine;
    try {
      createEngine = this.engineFactory(board);
    } catch (err) {
      const kind = err instanceof SimError || err instanceof BackendError ? 'unavailable' : 'internal';
      throw new BackendError(kind, `board ${board.id} cannot run on the sim backend: ${(err as Error).message}`, { cause: err });
    }
    return new SimDevice(board, {
      createEngine,
      mcuPins: mcuPinsOf(board) ?? [],
      clock: this.options.clock,
      sliceNanos: this.options.sliceNanos,
      yieldToHost: this.options.yieldToHost,
    });
  }

  /** Pins of every board this backend runs: the board file's names and the simulated MCU's. */
  pinNames(board: Board): readonly string[] | undefined {
    const mcuPins = mcuPinsOf(board);
    return mcuPins && pinNamesOf(mcuPins, board.pins);
  }

  /** How to build a chip for `board`; throws when the board has no usable sim engine here. */
  private engineFactory(board: Board): (image: SimImage) => SimEngine {
    const engine = board.backends.sim?.engine;
    const onUnmodelled = this.options.onUnmodelled ?? warnOnce;
    if (engine === 'rp2040js') {
      if (board.mcu.architecture !== 'arm') throw new SimError('unavailable', `rp2040js simulates an RP2040, but ${board.id}'s MCU is ${board.mcu.id}`);
      const bootrom = this.loadBootrom();
      return (image) => new Rp2040Engine(board, image, { bootrom, onUnmodelled });
    }
    if (engine === 'avr8js') {
      if (board.mcu.architecture !== 'avr') throw new SimError('unavailable', `avr8js simulates AVR chips, but ${board.id}'s MCU is ${board.mcu.id}`);
      return (image) => new AvrEngine(board, image, { onUnmodelled });
    }
    throw new SimError('unavailable', `board ${board.id} has no backends.sim.engine in its board file (rp2040js or avr8js)`);
  }

  /** Reads the configured bootrom once; a configured but unusable file makes RP2040 boards unavailable. */
  private loadBootrom(): Uint32Array | undefined {
    if (!this.bootromPath) return undefined;
    this.bootrom ??= readRp2040Bootrom(this.bootromPath);
    return this.bootrom;
  }
}

/** The MCU pin names of the engine that runs `board`, or undefined when no engine does. */
function mcuPinsOf(board: Board): readonly string[] | undefined {
  const engine = board.backends.sim?.engine;
  if (engine === 'rp2040js' && board.mcu.architecture === 'arm') return RP2040_PIN_NAMES;
  if (engine === 'avr8js' && board.mcu.architecture === 'avr') return ATMEGA328P_PIN_NAMES;
  return undefined;
}
