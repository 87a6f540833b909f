/**
 * GPIO pins as scenario pin steps see them (wokwi-cli's `expect-pin` and `set-control`): the
 * level a pin shows now and who sets it. Backends that model pins (the simulators) answer these.
 */

/** Who sets the level a pin shows. */
export type PinDriver = 'firmware' | 'outside' | 'pull-up' | 'pull-down' | 'floating';

export interface PinReading {
  level: 0 | 1;
  driver: PinDriver;
}

/**
 * The MCU pin a scenario's name means: the board's own name for it (`D13`, `LED`), or the MCU's
 * name, in any letter case. Undefined when it names no pin of this chip.
 */
export function resolvePinName(name: string, mcuPins: readonly string[], boardPins: Readonly<Record<string, string>>): string | undefined {
  const aliased = Object.entries(boardPins).find(([alias]) => alias.toLowerCase() === name.toLowerCase())?.[1] ?? name;
  return mcuPins.find((pin) => pin.toLowerCase() === aliased.toLowerCase());
}

/** Every name a scenario may use for a pin: the board's names first, then the MCU's. */
export function pinNamesOf(mcuPins: readonly string[], boardPins: Readonly<Record<string, string>>): string[] {
  return [...Object.keys(boardPins), ...mcuPins];
}
