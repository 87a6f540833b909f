import { RelayError, hasLoneSurrogate, isPlainObject } from './problem.js';

/**
 * RFC 8785 JSON Canonicalization Scheme (JCS): the bytes every x.vote/1 signature covers.
 *
 * - object keys sorted by UTF-16 code units (RFC 8785 section 3.2.3), which is what JS `<` on strings does;
 * - numbers serialised as ECMAScript `Number.prototype.toString` (section 3.2.2.3), so `-0` is `0`;
 * - strings escaped as `JSON.stringify` does (section 3.2.2.2);
 * - refused, with `RelayError`: non-finite numbers, `undefined` (also as a property value: JCS has no way
 *   to say "absent", and silently dropping it would sign something other than what the caller built),
 *   bigint, functions, symbols, non-plain objects (Date, Map, class instances), cycles, and strings with
 *   lone surrogates (I-JSON, RFC 7493 section 2.1, which JCS requires).
 */
export function canonicalJson(value: unknown): string {
  return serialise(value, [], new Set());
}

/**
 * `path` is the keys down to `value`, one array pushed and popped as the walk goes (a copy per
 * element made every signature check allocate a path for each node id in a slice); `fail` copies it.
 */
function serialise(value: unknown, path: string[], stack: Set<object>): string {
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) fail(path, `number ${String(value)} has no JSON form`);
      // ES Number serialisation is exactly JCS's number format (RFC 8785 section 3.2.2.3).
      return JSON.stringify(value);
    case 'string':
      if (hasLoneSurrogate(value)) fail(path, 'string holds a lone UTF-16 surrogate');
      return JSON.stringify(value);
    case 'object': {
      if (value === null) return 'null';
      if (stack.has(value)) fail(path, 'value is cyclic');
      stack.add(value);
      try {
        if (Array.isArray(value)) {
          let out = '[';
          for (let k = 0; k < value.length; k++) {
            path.push(String(k));
            // Holes in sparse arrays are undefined: refuse them like any undefined.
            out += (k === 0 ? '' : ',') + serialise(value[k], path, stack);
            path.pop();
          }
          return `${out}]`;
        }
        if (!isPlainObject(value)) fail(path, 'only plain objects, arrays and primitives have a canonical form');
        const keys = Object.keys(value).sort();
        let out = '{';
        for (let k = 0; k < keys.length; k++) {
          const key = keys[k]!;
          path.push(key);
          if (hasLoneSurrogate(key)) fail(path, 'key holds a lone UTF-16 surrogate');
          out += `${k === 0 ? '' : ','}${JSON.stringify(key)}:${serialise(value[key], path, stack)}`;
          path.pop();
        }
        return `${out}}`;
      } finally {
        stack.delete(value);
      }
    }
    default:
      return fail(path, `${typeof value} has no JSON form`);
  }
}

function fail(path: readonly string[], why: string): never {
  const where = path.length > 0 ? ` at ${path.join('.')}` : '';
  throw new RelayError(`cannot canonicalise${where}: ${why}`, [{ path: [...path], code: 'no_canonical_form', note: why }]);
}
