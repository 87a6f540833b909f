import type { Board } from '../../boards/board-schema.js';
import { AvrEngine } from '../../sim/avr-engine.js';
import { Rp2040Engine } from '../../sim/rp2040-engine.js';
import type { SimEngine, SimImage, UnmodelledListener } from '../../sim/sim-engine.js';
import { SimError } from '../../sim/sim-error.js';
import { ATMEGA328P_PIN_NAMES, RP2040_PIN_NAMES } from '../../sim/sim-pins.js';

/** What building a chip for a board needs besides the board: the bootrom and where unmodelled accesses go. */
export interface EngineFactoryOptions {
  /** The B1 boot ROM as 32-bit words, when one is configured. */
  bootrom?: Uint32Array;
  onUnmodelled: UnmodelledListener;
}

/** How to build a chip for `board`; throws `SimError('unavailable')` when the board has no usable sim engine. */
export type EngineFactoryFor = (board: Board, options: EngineFactoryOptions) => (image: SimImage) => SimEngine;

/**
 * The engines of the sim backend, by `backends.sim.engine` in the board file: rp2040js for RP2040
 * boards, avr8js for ATmega328P boards. Used on the host (availability) and in the engine's thread.
 */
export const simEngineFactory: EngineFactoryFor = (board, options) => {
  const engine = board.backends.sim?.engine;
  if (engine === 'rp2040js') {
    if (board.mcu.architecture !== 'arm') throw new SimError('unavailable', `rp2040js simulates an RP2040, but ${board.id}'s MCU is ${board.mcu.id}`);
    return (image) => new Rp2040Engine(board, image, { bootrom: options.bootrom, onUnmodelled: options.onUnmodelled });
  }
  if (engine === 'avr8js') {
    if (board.mcu.architecture !== 'avr') throw new SimError('unavailable', `avr8js simulates AVR chips, but ${board.id}'s MCU is ${board.mcu.id}`);
    return (image) => new AvrEngine(board, image, { onUnmodelled: options.onUnmodelled });
  }
  throw new SimError('unavailable', `board ${board.id} has no backends.sim.engine in its board file (rp2040js or avr8js)`);
};

/** The MCU pin names of the engine that runs `board`, or undefined when no engine does. */
export function mcuPinsOf(board: Board): readonly string[] | undefined {
  const engine = board.backends.sim?.engine;
  if (engine === 'rp2040js' && board.mcu.architecture === 'arm') return RP2040_PIN_NAMES;
  if (engine === 'avr8js' && board.mcu.architecture === 'avr') return ATMEGA328P_PIN_NAMES;
  return undefined;
}
