import { describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../boards/catalog.js';
import { AVR_GPIO_FOLLOW, THUMB_GPIO_FOLLOW, avrProgram, thumbProgram } from '../test/support/sim-programs.js';
import { AvrEngine } from './avr-engine.js';
import { Rp2040Engine } from './rp2040-engine.js';
import type { SimEngine } from './sim-engine.js';

const boards = loadBoardCatalog();
const board = (id: string) => boards.find((b) => b.id === id)!;
const failOnUnmodelled = (message: string) => {
  throw new Error(`unmodelled: ${message}`);
};

/** Each engine runs the same program: an LED pin high, and an output that follows an input. */
const chips: Array<{ name: string; make: () => SimEngine; led: string; input: string; output: string; untouched: string }> = [
  { name: 'RP2040 (rp2040js)', make: () => new Rp2040Engine(board('pico'), thumbProgram(THUMB_GPIO_FOLLOW), { onUnmodelled: failOnUnmodelled }), led: 'GP25', input: 'GP15', output: 'GP14', untouched: 'GP3' },
  { name: 'ATmega328P (avr8js)', make: () => new AvrEngine(board('uno'), avrProgram(AVR_GPIO_FOLLOW), { onUnmodelled: failOnUnmodelled }), led: 'PB5', input: 'PD2', output: 'PB4', untouched: 'PC3' },
];

describe.each(chips)('pins of the $name engine', ({ make, led, input, output, untouched }) => {
  it('shows what the firmware drives, and the firmware sees what is driven from outside', () => {
    const engine = make();
    expect(engine.pins.read(led).driver).not.toBe('firmware');
    engine.advance(20_000);
    expect(engine.pins.read(led)).toEqual({ level: 1, driver: 'firmware' });
    expect(engine.pins.read(output)).toEqual({ level: 0, driver: 'firmware' });
    engine.pins.drive(input, 1);
    expect(engine.pins.read(input)).toEqual({ level: 1, driver: 'outside' });
    engine.advance(40_000);
    expect(engine.pins.read(output)).toEqual({ level: 1, driver: 'firmware' });
    engine.pins.drive(input, 0);
    engine.advance(60_000);
    expect(engine.pins.read(output)).toEqual({ level: 0, driver: 'firmware' });
  });

  it('a pin nobody drives reads as an input with its pull', () => {
    const engine = make();
    engine.advance(10_000);
    const reading = engine.pins.read(untouched);
    expect(reading.driver).not.toBe('firmware');
    expect(reading.driver).not.toBe('outside');
  });

  it('names every pin once and refuses a name it does not have', () => {
    const engine = make();
    expect(new Set(engine.pins.names).size).toBe(engine.pins.names.length);
    expect(() => engine.pins.read('XX9')).toThrow(/no .* pin XX9/);
  });
});
