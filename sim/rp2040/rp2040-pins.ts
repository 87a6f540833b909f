import { type GPIOPin, GPIOPinState, type RP2040 } from 'rp2040js';
import type { PinReading } from '../../core/pins.js';
import { type EnginePins, RP2040_PIN_NAMES } from '../sim-pins.js';

/** GP0..GP29 of an rp2040js chip: the firmware's output level, or what the pin's input reads. */
export class Rp2040Pins implements EnginePins {
  readonly names: readonly string[];
  private readonly outside = new Map<string, 0 | 1>();

  constructor(private readonly rp2040: RP2040) {
    this.names = RP2040_PIN_NAMES;
  }

  read(name: string): PinReading {
    const pin = this.pin(name);
    const state = pin.value;
    if (state === GPIOPinState.Low) return { level: 0, driver: 'firmware' };
    if (state === GPIOPinState.High) return { level: 1, driver: 'firmware' };
    // Driven from outside, the pin shows that level, whether or not its pad lets the firmware read it.
    const outside = this.outside.get(name);
    if (outside !== undefined) return { level: outside, driver: 'outside' };
    const level = pin.inputValue ? 1 : 0;
    return { level, driver: state === GPIOPinState.InputPullUp ? 'pull-up' : state === GPIOPinState.InputPullDown ? 'pull-down' : 'floating' };
  }

  drive(name: string, level: 0 | 1): void {
    this.pin(name).setInputValue(level === 1);
    this.outside.set(name, level);
  }

  private pin(name: string): GPIOPin {
    const pin = this.rp2040.gpio[this.names.indexOf(name)];
    if (!pin) throw new Error(`no RP2040 pin ${name}; pin names are resolved before they reach the engine`);
    return pin;
  }
}
