/**
 * Matching JSON answers against a scenario's expectations (docs/scenarios.md, "Matching").
 * Subset mode: objects may carry more keys; exact mode: the same keys. Arrays always match element
 * by element with the same length. Operators: `{"$regex": "..."}`, `{"$not": X}`,
 * `{"$contains": X}`, `{"$exists": bool}`.
 */

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const operatorKeys = new Set(['$regex', '$not', '$contains', '$exists']);
function isOperator(v: unknown): v is Record<string, unknown> {
  return isObject(v) && Object.keys(v).length === 1 && operatorKeys.has(Object.keys(v)[0] as string);
}

const show = (v: unknown) => {
  const s = JSON.stringify(v);
  return s === undefined ? 'nothing' : s.length > 200 ? `${s.slice(0, 200)}...` : s;
};

/** Returns undefined when `actual` matches `expected`, else a sentence naming the first path that differs. */
export function matchJson(expected: unknown, actual: unknown, options: { exact: boolean }, at = '$'): string | undefined {
  if (isOperator(expected)) {
    const [op, arg] = Object.entries(expected)[0] as [string, unknown];
    switch (op) {
      case '$regex':
        if (typeof actual !== 'string') return `${at}: expected a string matching /${String(arg)}/, got ${show(actual)}`;
        return new RegExp(String(arg)).test(actual) ? undefined : `${at}: expected to match /${String(arg)}/, got ${show(actual)}`;
      case '$not':
        return matchJson(arg, actual, options, at) === undefined ? `${at}: expected anything but ${show(arg)}, got ${show(actual)}` : undefined;
      case '$contains':
        if (!Array.isArray(actual)) return `${at}: expected an array containing ${show(arg)}, got ${show(actual)}`;
        return actual.some((item) => matchJson(arg, item, options) === undefined) ? undefined : `${at}: no element matches ${show(arg)} in ${show(actual)}`;
      case '$exists':
        return (actual !== undefined) === Boolean(arg) ? undefined : `${at}: expected ${arg ? 'a value' : 'no value'}, got ${show(actual)}`;
    }
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${at}: expected an array, got ${show(actual)}`;
    if (expected.length !== actual.length) return `${at}: expected ${expected.length} elements, got ${actual.length}: ${show(actual)}`;
    for (let i = 0; i < expected.length; i++) {
      const problem = matchJson(expected[i], actual[i], options, `${at}[${i}]`);
      if (problem) return problem;
    }
    return undefined;
  }
  if (isObject(expected)) {
    if (!isObject(actual)) return `${at}: expected an object, got ${show(actual)}`;
    for (const [key, value] of Object.entries(expected)) {
      const problem = matchJson(value, actual[key], options, `${at}.${key}`);
      if (problem) return problem;
    }
    if (options.exact) {
      const extra = Object.keys(actual).filter((k) => !(k in expected));
      if (extra.length) return `${at}: unexpected key${extra.length > 1 ? 's' : ''} ${extra.join(', ')} (exact match)`;
    }
    return undefined;
  }
  return Object.is(expected, actual) ? undefined : `${at}: expected ${show(expected)}, got ${show(actual)}`;
}
