import type { PinReading } from '../core/pins.js';

/** One simulated chip's GPIO pins by the MCU's own names (`GP25`, `PB5`). */
export interface EnginePins {
  readonly names: readonly string[];
  /** The level the pin shows now; throws for a name not in `names` (callers resolve names first). */
  read(name: string): PinReading;
  /** Drives `name` from outside (a button, a jumper); the firmware sees it where the pin is an input. */
  drive(name: string, level: 0 | 1): void;
}

/** GP0..GP29: the RP2040's user GPIOs. */
export const RP2040_PIN_NAMES: readonly string[] = Array.from({ length: 30 }, (_, i) => `GP${i}`);

/** The ATmega328P's port pins (PC6 is RESET on the Uno but still a port pin of the chip). */
export const ATMEGA328P_PIN_NAMES: readonly string[] = [
  ...Array.from({ length: 8 }, (_, i) => `PB${i}`),
  ...Array.from({ length: 7 }, (_, i) => `PC${i}`),
  ...Array.from({ length: 8 }, (_, i) => `PD${i}`),
];
