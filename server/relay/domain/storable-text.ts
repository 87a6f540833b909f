import { hasLoneSurrogate } from '../../../core/unicode-text.js';
import { invalidInputAt } from './relay-errors.js';
import { throwCoreProblems } from './signed-document.js';

/**
 * Text the relay stores as it was sent (decision 0490). U+0000 cannot be held by PostgreSQL's text
 * or json at all, and a lone UTF-16 surrogate cannot be held by its json, nor by any store as sent
 * (UTF-8 has no encoding of it; text keeps U+FFFD instead). A relay on PostgreSQL answered 500 for
 * them, and a page of a peer's feed carrying one failed as a whole at every probe, holding that
 * peer's later events back for good. The relay refuses both on either store (relays federate, so
 * they must agree on what they take), and peer events holding one are skipped.
 */

type Key = string | number;
interface Place {
  value: unknown;
  key: Key | null;
  parent: Place | null;
}

/** Where the first unstorable string (a value or an object key) is in a parsed JSON value, and why; null when there is none. */
export function unstorableText(value: unknown): { loc: Key[]; text: string; problem: 'nul' | 'lone-surrogate' } | null {
  // Iterative, with parent links: a vote's hint may nest as deep as the body limit allows.
  const stack: Place[] = [{ value, key: null, parent: null }];
  while (stack.length > 0) {
    const place = stack.pop()!;
    const v = place.value;
    if (typeof v === 'string') {
      const problem = problemOf(v);
      if (problem) return { loc: locOf(place), text: v, problem };
    } else if (Array.isArray(v)) {
      for (let k = v.length - 1; k >= 0; k--) stack.push({ value: v[k], key: k, parent: place });
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      for (let k = keys.length - 1; k >= 0; k--) {
        const key = keys[k]!;
        const entry: Place = { value: (v as Record<string, unknown>)[key], key, parent: place };
        const problem = problemOf(key);
        if (problem) return { loc: locOf(entry), text: key, problem };
        stack.push(entry);
      }
    }
  }
  return null;
}

/** Refuses unstorable text in `value`, located under `where` (`body`, `query`). */
export function refuseUnstorableText(value: unknown, where: Key[]): void {
  const found = unstorableText(value);
  if (found === null) return;
  const loc = [...where, ...found.loc];
  // The core's problem for a lone surrogate in a claim, so one rule reads the same everywhere.
  if (found.problem === 'lone-surrogate') throwCoreProblems([{ path: [], code: 'lone_surrogate', input: found.text }], loc);
  throw invalidInputAt(loc, [{ path: [], code: 'nul_character', input: found.text }]);
}

function problemOf(s: string): 'nul' | 'lone-surrogate' | null {
  if (s.includes('\u0000')) return 'nul';
  return hasLoneSurrogate(s) ? 'lone-surrogate' : null;
}

function locOf(place: Place): Key[] {
  const loc: Key[] = [];
  for (let p: Place | null = place; p !== null && p.key !== null; p = p.parent) loc.push(p.key);
  return loc.reverse();
}
