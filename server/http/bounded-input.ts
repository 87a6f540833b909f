/**
 * What a 422 echoes as `input`, bounded. pydantic echoes the value that failed as it was sent; a
 * hostile body (JSON nested 4 500 deep, a 300 KB string, an array of 10 000 items) would then be
 * sent back whole, and serialising a value that deep overflowed the stack: express answered its HTML
 * error page with the stack trace (issue 9). So the echo keeps the start of the value and marks
 * every cut with `…` (docs/bench-api.md and docs/relay-api.md, "Errors"):
 *
 * - an array or object nested deeper than `INPUT_MAX_DEPTH` levels (the input itself is level 1)
 *   is replaced by the string `"…"`;
 * - a string longer than `INPUT_MAX_STRING_CHARS` code points keeps that many and ends with `…`;
 * - an array keeps its first `INPUT_MAX_ENTRIES` items and then the item `"…"`; an object keeps
 *   its first `INPUT_MAX_ENTRIES` keys and then the key `"…"` with the value `"…"`;
 * - once `INPUT_MAX_CHARS` characters are echoed (strings, keys, numbers; one for any other value),
 *   every further value is `"…"`.
 *
 * The walk never goes deeper than `INPUT_MAX_DEPTH`, so it cannot overflow the stack either.
 */
export const INPUT_MAX_DEPTH = 8;
export const INPUT_MAX_STRING_CHARS = 1000;
export const INPUT_MAX_ENTRIES = 100;
export const INPUT_MAX_CHARS = 16 * 1024;

/** The mark of a cut. */
export const TRUNCATED = '…';

/** `input` as a 422 echoes it: the value, cut to the bounds above (values that are not JSON become `null`). */
export function boundedInput(input: unknown): unknown {
  const budget = { chars: INPUT_MAX_CHARS };
  return bounded(input, 1, budget);
}

function bounded(value: unknown, depth: number, budget: { chars: number }): unknown {
  if (budget.chars <= 0) return TRUNCATED;
  if (typeof value === 'string') return boundedString(value, budget);
  // Every value spends at least one character, so the budget bounds the whole answer.
  budget.chars -= typeof value === 'number' ? String(value).length : 1;
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value !== 'object') return null;
  if (depth > INPUT_MAX_DEPTH) return TRUNCATED;
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const item of value.slice(0, INPUT_MAX_ENTRIES)) out.push(bounded(item, depth + 1, budget));
    if (value.length > INPUT_MAX_ENTRIES) out.push(TRUNCATED);
    return out;
  }
  const out: Record<string, unknown> = {};
  const keys = Object.keys(value);
  for (const key of keys.slice(0, INPUT_MAX_ENTRIES)) {
    const shownKey = boundedString(key, budget);
    out[shownKey] = bounded((value as Record<string, unknown>)[key], depth + 1, budget);
  }
  if (keys.length > INPUT_MAX_ENTRIES) out[TRUNCATED] = TRUNCATED;
  return out;
}

/** Cuts `text` to the string limit and the remaining budget, on a code point boundary. */
function boundedString(text: string, budget: { chars: number }): string {
  const limit = Math.max(0, Math.min(INPUT_MAX_STRING_CHARS, budget.chars));
  let shown = text;
  if (text.length > limit) {
    // Code points, not UTF-16 units, so a cut never leaves half a surrogate pair. `limit * 2` units
    // hold more than `limit` code points whenever the text is longer than that.
    const points = Array.from(text.slice(0, limit * 2));
    if (points.length > limit || text.length > limit * 2) shown = points.slice(0, limit).join('') + TRUNCATED;
  }
  budget.chars -= shown.length + 1;
  return shown;
}
