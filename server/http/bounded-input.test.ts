import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { INPUT_MAX_CHARS, INPUT_MAX_DEPTH, INPUT_MAX_ENTRIES, INPUT_MAX_STRING_CHARS, TRUNCATED, boundedInput } from './bounded-input.js';

/** Depth of a JSON value; the value itself is level 1 when it is an array or object. */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  return 1 + Math.max(0, ...Object.values(value).map(depthOf));
}

/** `depth` arrays nested in one another, built without recursion. */
function nestedArrays(depth: number): unknown[] {
  const root: unknown[] = [];
  let at = root;
  for (let k = 1; k < depth; k++) {
    const inner: unknown[] = [];
    at.push(inner);
    at = inner;
  }
  return root;
}

describe('boundedInput', () => {
  it('echoes small values exactly as sent', () => {
    const value = { board: 'pico', idle_seconds: '90', list: [1, 2, { a: null, b: true }], title: 'é🎉' };
    expect(boundedInput(value)).toEqual(value);
    expect(boundedInput(null)).toBeNull();
    expect(boundedInput('x'.repeat(INPUT_MAX_STRING_CHARS))).toBe('x'.repeat(INPUT_MAX_STRING_CHARS));
  });

  it('replaces what is nested deeper than the limit, however deep the input (4 500 and 100 000 levels)', () => {
    for (const depth of [INPUT_MAX_DEPTH + 1, 4500, 100_000]) {
      const out = boundedInput(nestedArrays(depth));
      expect(depthOf(out)).toBe(INPUT_MAX_DEPTH);
      expect(() => JSON.stringify(out)).not.toThrow();
    }
    expect(boundedInput(nestedArrays(INPUT_MAX_DEPTH))).toEqual(nestedArrays(INPUT_MAX_DEPTH));
  });

  it('cuts long strings on a code point boundary and marks the cut', () => {
    const cut = boundedInput('🎉'.repeat(INPUT_MAX_STRING_CHARS + 5)) as string;
    expect(cut).toBe('🎉'.repeat(INPUT_MAX_STRING_CHARS) + TRUNCATED);
    expect(boundedInput('y'.repeat(300_000))).toBe('y'.repeat(INPUT_MAX_STRING_CHARS) + TRUNCATED);
  });

  it('stops echoing once the budget is spent: 100 strings of 1 000 characters in 100 objects', () => {
    const wide = Array.from({ length: 100 }, () => Array.from({ length: 100 }, () => 'z'.repeat(1000)));
    const out = JSON.stringify(boundedInput(wide));
    expect(out.length).toBeLessThan(INPUT_MAX_CHARS * 2);
    expect(out).toContain(`"${TRUNCATED}"`);
  });

  it('keeps the first entries of long arrays and objects, then a mark', () => {
    const array = boundedInput(Array.from({ length: 500 }, (_, k) => k)) as unknown[];
    expect(array).toHaveLength(INPUT_MAX_ENTRIES + 1);
    expect(array.at(-1)).toBe(TRUNCATED);
    const object = boundedInput(Object.fromEntries(Array.from({ length: 500 }, (_, k) => [`k${k}`, k]))) as Record<string, unknown>;
    expect(Object.keys(object)).toHaveLength(INPUT_MAX_ENTRIES + 1);
    expect(object[TRUNCATED]).toBe(TRUNCATED);
  });

  it('property: any JSON value comes back serialisable, within the depth and about the size budget', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 12 }), fc.nat({ max: 5000 }), (value, depth) => {
        const input = depth > 10 ? [value, nestedArrays(depth)] : value;
        const out = boundedInput(input);
        expect(depthOf(out)).toBeLessThanOrEqual(INPUT_MAX_DEPTH);
        // Every value spends at least one character of the budget; quotes and punctuation add a few per value.
        expect(JSON.stringify(out).length).toBeLessThan(INPUT_MAX_CHARS * 6);
      }),
      { seed: 9, numRuns: 200 },
    );
  });
});
