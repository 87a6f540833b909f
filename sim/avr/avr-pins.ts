import { type AVRIOPort, type CPU, PinState } from 'avr8js';
import type { PinReading } from '../../core/pins.js';
import type { EnginePins } from '../sim-pins.js';

/** An avr8js port and its letter (`B` for PB0..PB7). */
export interface LetteredPort {
  letter: string;
  port: AVRIOPort;
  /** Data address of the port's PIN register: what the firmware reads. */
  pinRegister: number;
  /** Pins the package has (PC7 is RESET's pin on the ATmega328P and not a port pin). */
  width: number;
}

/** The port pins of an avr8js chip (`PB5`): the firmware's output level, or what its PIN register reads. */
export class AvrPins implements EnginePins {
  readonly names: readonly string[];
  private readonly outside = new Map<string, 0 | 1>();

  constructor(
    private readonly cpu: CPU,
    private readonly ports: readonly LetteredPort[],
  ) {
    this.names = ports.flatMap((p) => Array.from({ length: p.width }, (_, i) => `P${p.letter}${i}`));
  }

  read(name: string): PinReading {
    const { port, bit } = this.locate(name);
    const state = port.port.pinState(bit);
    if (state === PinState.Low) return { level: 0, driver: 'firmware' };
    if (state === PinState.High) return { level: 1, driver: 'firmware' };
    const outside = this.outside.get(name);
    if (outside !== undefined) return { level: outside, driver: 'outside' };
    const level = (this.cpu.data[port.pinRegister]! >> bit) & 1 ? 1 : 0;
    return { level, driver: state === PinState.InputPullUp ? 'pull-up' : 'floating' };
  }

  drive(name: string, level: 0 | 1): void {
    const { port, bit } = this.locate(name);
    port.port.setPin(bit, level === 1);
    this.outside.set(name, level);
  }

  private locate(name: string): { port: LetteredPort; bit: number } {
    const port = this.ports.find((p) => name.startsWith(`P${p.letter}`));
    const bit = Number(name.slice(2));
    if (!port || !this.names.includes(name)) throw new Error(`no ATmega pin ${name}; pin names are resolved before they reach the engine`);
    return { port, bit };
  }
}
