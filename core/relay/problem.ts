/**
 * The relay core's problems with an input, in its own neutral terms: where (`path`, inside the
 * value validated), what (`code`), the bound that was broken (`limit`) and the value found
 * (`input`). The core never words them for a protocol: the wire's one translator
 * (wire/problem-detail.ts) turns them into FastAPI's 422 entries in pydantic's exact words, and
 * docs/problems.md lists every code with the `type` it answers as (decision 0615).
 */
export const problemCodes = [
  // Shapes.
  'missing',
  'extra',
  'not_object',
  'not_string',
  'not_list',
  'not_integer',
  'not_whole_number',
  'lone_surrogate',
  'too_short',
  'too_long',
  'below_minimum',
  'not_one_of',
  'pattern_mismatch',
  // Rules of the protocol.
  'line_break',
  'signature_text',
  'slice_and_slice_hash',
  'slice_hash_mismatch',
  'hint_too_deep',
  'hint_too_big',
  'quorum_set_too_deep',
  'quorum_set_size',
  'self_in_slice',
  'node_twice',
  'threshold_range',
  'not_posted_item',
  'not_item_type',
  'not_posting_author',
  'not_stored_title',
  'not_stored_media_type',
  'no_canonical_form',
  // Rules the relay service checks beyond the documents (server/relay's domain: phone numbers,
  // peer URLs, uploads, signatures, stored slices, storable text), worded by the same translator.
  'not_phone_number',
  'not_absolute_url',
  'not_http_url',
  'url_with_extras',
  'own_url',
  'not_multipart',
  'form_field_too_big',
  'file_parts',
  'form_parts',
  'not_author_signature',
  'not_declarer_signature',
  'unknown_slice_hash',
  'nul_character',
  // Rules the relay's use cases check on ids, proofs, statements and queries (decision 0780).
  'not_item_id',
  'not_node_id',
  'not_author_id',
  'unacceptable_node_id',
  'not_this_relay',
  'created_at_skew',
  'created_at_ahead',
  'updated_ms_ahead',
  'not_node_signature',
  'not_voter_signature',
  'not_path_item',
  'media_type_too_long',
  'authorship_not_json',
  'not_slice_member',
  'above_maximum',
  'too_many_items',
  'not_pairing_token',
] as const;
export type ProblemCode = (typeof problemCodes)[number];

/** One thing wrong with an input. */
export interface Problem {
  /** Where, inside the value that was validated (callers put it under `body` or a field). */
  path: string[];
  code: ProblemCode;
  /** The value at `path`, when an answer should show it back (absent: shown as null). */
  input?: unknown;
  /** The bound that was broken: a length in code points, a depth, bytes, nodes or entries. */
  limit?: number;
  /** What was counted against `limit` (the nodes a quorum set names). */
  count?: number;
  /** What was allowed or due: the values of `not_one_of`, the pattern, the hash, the stored title. */
  expected?: string | null | readonly string[];
  /** What the place holds or why, said after the message in parentheses ("Unix seconds"). */
  note?: string;
  /** For rules about time: the checker's clock when it checked, in Unix seconds. */
  nowSeconds?: number;
  /** For rules about a time in Unix milliseconds (`updated_ms`): the checker's clock, in the same unit. */
  nowMs?: number;
}

/** Either the typed value or the list of everything wrong with the input (never both). */
export type Validated<T> = { ok: true; value: T } | { ok: false; problems: Problem[] };

/** The one error type of the relay core: a caller broke a precondition; `problems` say which. */
export class RelayError extends Error {
  override readonly name = 'RelayError';
  constructor(
    message: string,
    readonly problems: Problem[] = [],
  ) {
    super(message);
  }
}

/** Returns the value of a `Validated`, or throws `RelayError` carrying its problems. */
export function unwrap<T>(result: Validated<T>, what: string): T {
  if (result.ok) return result.value;
  const first = result.problems[0];
  const where = first && first.path.length > 0 ? ` at ${first.path.join('.')}` : '';
  const more = result.problems.length > 1 ? ` (and ${result.problems.length - 1} more)` : '';
  throw new RelayError(`invalid ${what}${where}: ${first ? describeProblem(first) : 'unknown problem'}${more}`, result.problems);
}

/**
 * A problem in a line a programmer reads in a stack trace: its code with what bounds it
 * ("too_long (limit 280)"). Answers to clients never use it: the wire's translator words those.
 */
export function describeProblem(problem: Problem): string {
  const facts: string[] = [];
  if (problem.limit !== undefined) facts.push(`limit ${problem.limit}`);
  if (problem.count !== undefined) facts.push(`found ${problem.count}`);
  if (problem.expected !== undefined && problem.expected !== null) {
    const expected = typeof problem.expected === 'string' ? problem.expected : problem.expected.join(', ');
    facts.push(`expected ${expected}`);
  }
  if (problem.note !== undefined) facts.push(problem.note);
  return facts.length > 0 ? `${problem.code} (${facts.join('; ')})` : problem.code;
}

/** The problem of a document (or a nested one) that is no JSON object. */
export function notAnObject(path: string[], input: unknown): Problem {
  return { path, code: 'not_object', input };
}

/** The pattern of every item id, node id and slice hash: SHA-256 hex in lower case. */
export const HEX64_PATTERN = '^[0-9a-f]{64}$';

/** True for a plain JSON-like object (not an array, not a class instance). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

