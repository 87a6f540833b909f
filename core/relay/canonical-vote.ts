import { isPlainObject } from './problem.js';

/**
 * The canonical JSON (RFC 8785) of a vote's signed part, written out directly for the shape every
 * vote a relay checks has, or null for anything else (then `canonicalJson`'s general walk decides).
 *
 * Every vote a relay takes is canonicalised once for its signature check, and the general walk (key
 * sorting at each level, a surrogate check and a `JSON.stringify` per string, an object rebuilt
 * without `sig` and `hint`) was about half of that check's work on the event loop (issue 30,
 * decision 1160). Here the keys are known, so their order is fixed, and each string is taken only
 * when JSON would write it as it is (printable ASCII without `"` or `\`), which every field of a
 * parsed vote is (literals, hex ids, integers). So the text is what `canonicalJson` gives whenever
 * this answers at all: `canonical-vote.test.ts` checks that property on generated votes, near-votes
 * and odd values.
 */

/** The signed part's keys in RFC 8785 order (UTF-16 code units): `created_at` an integer, `slice` a quorum set, the others strings. */
const SIGNED_KEYS = ['created_at', 'item', 'phase', 'schema', 'scheme', 'slice', 'slice_hash', 'value', 'voter'] as const;
/** Every field of an x.vote/1 document: the signed ones, `sig` and `hint` (`parseVote` refuses any other). */
export const VOTE_FIELDS: ReadonlySet<string> = new Set([...SIGNED_KEYS, 'sig', 'hint']);

/** Text JSON writes as it is between quotes: printable ASCII but `"` and `\`. */
const VERBATIM_TEXT = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** Slices nested deeper than this go to the general walk (the design note's limit is 4). */
const SLICE_DEPTH_MAX = 8;

/** The canonical JSON of `vote` without `sig` and `hint`, or null when its shape is not the plain one. */
export function canonicalVoteText(vote: object): string | null {
  const fields = vote as Record<string, unknown>;
  for (const key of Object.keys(fields)) if (!VOTE_FIELDS.has(key)) return null;
  let out = '{';
  for (const key of SIGNED_KEYS) {
    // `in` would also see inherited keys; the signed part is the own keys (`voteSigningBytes`).
    if (!Object.prototype.hasOwnProperty.call(fields, key)) continue;
    const value = fields[key];
    // Top-level undefined is absent, as in `voteSigningBytes`.
    if (value === undefined) continue;
    const text = key === 'slice' ? sliceText(value, 1) : key === 'created_at' ? integerText(value) : stringText(value);
    if (text === null) return null;
    out += `${out.length === 1 ? '' : ','}"${key}":${text}`;
  }
  return `${out}}`;
}

function stringText(value: unknown): string | null {
  return typeof value === 'string' && VERBATIM_TEXT.test(value) ? `"${value}"` : null;
}

function integerText(value: unknown): string | null {
  // A safe integer prints as JSON (and JCS) print it; -0 prints as 0 both ways.
  return typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : null;
}

/** A quorum set `{ t, v, i }` (keys in that set only, each optional), or null. */
function sliceText(slice: unknown, depth: number): string | null {
  if (depth > SLICE_DEPTH_MAX || !isPlainObject(slice)) return null;
  for (const key of Object.keys(slice)) if (key !== 't' && key !== 'v' && key !== 'i') return null;
  let out = '{';
  // "i" < "t" < "v".
  if (Object.prototype.hasOwnProperty.call(slice, 'i')) {
    const inner = slice.i;
    if (!Array.isArray(inner)) return null;
    let list = '[';
    for (let k = 0; k < inner.length; k++) {
      const text = sliceText(inner[k], depth + 1);
      if (text === null) return null;
      list += (k === 0 ? '' : ',') + text;
    }
    out += `"i":${list}]`;
  }
  if (Object.prototype.hasOwnProperty.call(slice, 't')) {
    const text = integerText(slice.t);
    if (text === null) return null;
    out += `${out.length === 1 ? '' : ','}"t":${text}`;
  }
  if (Object.prototype.hasOwnProperty.call(slice, 'v')) {
    const nodes = slice.v;
    if (!Array.isArray(nodes)) return null;
    for (let k = 0; k < nodes.length; k++) if (typeof nodes[k] !== 'string' || !VERBATIM_TEXT.test(nodes[k] as string)) return null;
    // One joined string, not a rope of concatenations: encoding it then flattens nothing.
    out += `${out.length === 1 ? '' : ','}"v":${nodes.length === 0 ? '[]' : `["${nodes.join('","')}"]`}`;
  }
  return `${out}}`;
}
