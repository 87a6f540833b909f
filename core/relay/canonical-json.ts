import { RelayError, isPlainObject } from './problem.js';
import { hasLoneSurrogate } from '../unicode-text.js';

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
  return quickly(value, 0) ?? serialise(value, [], new Set());
}

/**
 * Nesting past which the quick walk hands over to the careful one, whose stack of ancestors tells
 * a cycle from deep data. No document the relay signs or checks comes near it (a slice nests 4).
 */
const QUICK_DEPTH_MAX = 64;

/**
 * The canonical text of `value`, or undefined when some part has none or the value nests past
 * `QUICK_DEPTH_MAX`: then `serialise` walks it again and names the part. Every signature made and
 * checked runs this (a vote's slice holds 20 node ids), and the careful walk's path of keys and
 * set of ancestors were about a fifth of its time (issue 30, decision 1140): here neither is kept,
 * and a string is checked by `isWellFormed`, not a regular expression. The text is the careful
 * walk's (the same rules, in the same order; a property test compares it with RFC 8785's).
 */
function quickly(value: unknown, depth: number): string | undefined {
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : undefined;
    case 'string':
      return value.isWellFormed() ? JSON.stringify(value) : undefined;
    case 'object': {
      if (value === null) return 'null';
      if (depth >= QUICK_DEPTH_MAX) return undefined;
      if (Array.isArray(value)) {
        let out = '[';
        for (let k = 0; k < value.length; k++) {
          const element = quickly(value[k], depth + 1);
          if (element === undefined) return undefined;
          out += k === 0 ? element : `,${element}`;
        }
        return `${out}]`;
      }
      if (!isPlainObject(value)) return undefined;
      const keys = Object.keys(value).sort();
      let out = '{';
      for (let k = 0; k < keys.length; k++) {
        const key = keys[k]!;
        const member = key.isWellFormed() ? quickly(value[key], depth + 1) : undefined;
        if (member === undefined) return undefined;
        out += `${k === 0 ? '' : ','}${JSON.stringify(key)}:${member}`;
      }
      return `${out}}`;
    }
    default:
      return undefined;
  }
}

/**
 * The careful walk, for a value the quick one gave up on: the canonical text, or `RelayError`
 * naming the first part that has none. `path` is the keys down to `value`, one array pushed and
 * popped as the walk goes (a copy per element made every signature check allocate a path for each
 * node id in a slice); `fail` copies it.
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
