/** Durations as scenario files and the CLI write them; apart from the zod schemas so the CLI parses them without zod. */
export const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)$/;
const unitMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds of a duration: a number (milliseconds) or text with a unit (`500ms`, `1.5s`, `2m`, `1h`). */
export function durationMs(value: number | string): number {
  if (typeof value === 'number') return value;
  const match = DURATION.exec(value.trim());
  if (!match) throw new Error(`not a duration: ${JSON.stringify(value)}`);
  return Number(match[1]) * (unitMs[match[2] as string] as number);
}
