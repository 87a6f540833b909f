import { invalidInput } from './relay-error.js';

/**
 * U+0000 in anything the relay stores (decision 0490). PostgreSQL text and jsonb cannot hold it, so
 * a relay on PostgreSQL answered 500 for it, and a page of a peer's feed carrying one failed as a
 * whole at every probe, holding that peer's later events back for good. The relay refuses it on
 * both stores (relays federate, so they must agree on what they take), and peer events holding one
 * are skipped.
 */

type Key = string | number;
interface Place {
  value: unknown;
  key: Key | null;
  parent: Place | null;
}

/** Where the first U+0000 is in a parsed JSON value, and the string (or object key) holding it; null when there is none. */
export function nulLocation(value: unknown): { loc: Key[]; text: string } | null {
  // Iterative, with parent links: a vote's hint may nest as deep as the body limit allows.
  const stack: Place[] = [{ value, key: null, parent: null }];
  while (stack.length > 0) {
    const place = stack.pop()!;
    const v = place.value;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return { loc: locOf(place), text: v };
    } else if (Array.isArray(v)) {
      for (let k = v.length - 1; k >= 0; k--) stack.push({ value: v[k], key: k, parent: place });
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      for (let k = keys.length - 1; k >= 0; k--) {
        const key = keys[k]!;
        const entry: Place = { value: (v as Record<string, unknown>)[key], key, parent: place };
        if (key.includes('\u0000')) return { loc: locOf(entry), text: key };
        stack.push(entry);
      }
    }
  }
  return null;
}

/** Throws the 422 for a U+0000 in `value`, located under `where` (`body`, `query`). */
export function refuseNul(value: unknown, where: Key[]): void {
  const found = nulLocation(value);
  if (found === null) return;
  throw invalidInput([...where, ...found.loc], 'Value error, must not contain U+0000 (NUL)', found.text);
}

function locOf(place: Place): Key[] {
  const loc: Key[] = [];
  for (let p: Place | null = place; p !== null && p.key !== null; p = p.parent) loc.push(p.key);
  return loc.reverse();
}
