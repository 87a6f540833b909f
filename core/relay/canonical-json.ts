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
  try {
    return serialise(value, 0, null);
  } catch (error) {
    if (error !== UNWATCHED) throw error;
    return serialise(value, 0, { path: [], ancestors: new Set() });
  }
}

/**
 * What a watched walk keeps: the keys down to the value (one array pushed and popped as it goes),
 * for naming a refused part, and the objects it is inside, for telling a cycle from deep data.
 * Every signature made and checked canonicalises (a vote's slice holds 20 node ids), and this
 * bookkeeping was about a fifth of the time (issue 30, decision 1140): so a walk runs unwatched
 * first, and walks again watched only when it meets something it cannot name or nests past
 * `UNWATCHED_DEPTH_MAX`.
 */
interface Watch {
  path: string[];
  ancestors: Set<object>;
}

/** Nesting past which an unwatched walk starts again watched. No document the relay signs comes near it (a slice nests 4). */
const UNWATCHED_DEPTH_MAX = 64;

/** Thrown by an unwatched walk to start again watched; never leaves `canonicalJson` (no Error: nothing to trace). */
const UNWATCHED: unique symbol = Symbol('walk again watched');

function serialise(value: unknown, depth: number, watch: Watch | null): string {
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) refuse(watch, `number ${String(value)} has no JSON form`);
      // ES Number serialisation is exactly JCS's number format (RFC 8785 section 3.2.2.3).
      return JSON.stringify(value);
    case 'string':
      if (hasLoneSurrogate(value)) refuse(watch, 'string holds a lone UTF-16 surrogate');
      return JSON.stringify(value);
    case 'object': {
      if (value === null) return 'null';
      if (watch === null) {
        if (depth >= UNWATCHED_DEPTH_MAX) throw UNWATCHED;
      } else {
        if (watch.ancestors.has(value)) refuse(watch, 'value is cyclic');
        watch.ancestors.add(value);
      }
      try {
        if (Array.isArray(value)) {
          let out = '[';
          for (let k = 0; k < value.length; k++) {
            watch?.path.push(String(k));
            // Holes in sparse arrays are undefined: refuse them like any undefined.
            out += (k === 0 ? '' : ',') + serialise(value[k], depth + 1, watch);
            watch?.path.pop();
          }
          return `${out}]`;
        }
        if (!isPlainObject(value)) refuse(watch, 'only plain objects, arrays and primitives have a canonical form');
        const keys = Object.keys(value).sort();
        let out = '{';
        for (let k = 0; k < keys.length; k++) {
          const key = keys[k]!;
          watch?.path.push(key);
          if (hasLoneSurrogate(key)) refuse(watch, 'key holds a lone UTF-16 surrogate');
          out += `${k === 0 ? '' : ','}${JSON.stringify(key)}:${serialise(value[key], depth + 1, watch)}`;
          watch?.path.pop();
        }
        return `${out}}`;
      } finally {
        watch?.ancestors.delete(value);
      }
    }
    default:
      return refuse(watch, `${typeof value} has no JSON form`);
  }
}

/** Refuses the part being walked: named when watched, otherwise by walking again watched. */
function refuse(watch: Watch | null, why: string): never {
  if (watch === null) throw UNWATCHED;
  return fail(watch.path, why);
}

function fail(path: readonly string[], why: string): never {
  const where = path.length > 0 ? ` at ${path.join('.')}` : '';
  throw new RelayError(`cannot canonicalise${where}: ${why}`, [{ path: [...path], code: 'no_canonical_form', note: why }]);
}
