import type { Problem, ProblemCode } from '../core/relay/problem.js';

/**
 * The relay core's problem codes in pydantic v2's words: the wording half of the one translator
 * (problem-detail.ts puts the result into a 422 entry). A `note` from the core is said after the
 * message in parentheses; the rules of the protocol answer pydantic's `value_error` with their
 * sentence after `Value error, `. docs/problems.md lists every code with the type it answers as
 * (test/integration/problem-catalog.test.ts).
 */

/** One pydantic error without its place and input. */
export interface PydanticError {
  type: string;
  msg: string;
  ctx?: Record<string, unknown>;
}

/** `1 word` or `n words`, as pydantic counts. */
export const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** pydantic's `string_too_long` for a limit of `maxLength` characters. */
export function stringTooLong(maxLength: number): PydanticError {
  return { type: 'string_too_long', msg: `String should have at most ${plural(maxLength, 'character')}`, ctx: { max_length: maxLength } };
}

/** pydantic's `string_too_short` for a floor of `minLength` characters. */
export function stringTooShort(minLength: number): PydanticError {
  return { type: 'string_too_short', msg: `String should have at least ${plural(minLength, 'character')}`, ctx: { min_length: minLength } };
}

/** pydantic's words for the values a literal allows: `'a'`, `'a' or 'b'`, `'a', 'b' or 'c'`. */
function literalText(values: readonly string[]): string {
  const quoted = values.map((v) => `'${v}'`);
  return quoted.length === 1 ? (quoted[0] as string) : `${quoted.slice(0, -1).join(', ')} or ${quoted.at(-1)}`;
}

/** The last key of the path: the field a rule names. */
const field = (p: Problem) => p.path.at(-1) ?? '';
const limitOf = (p: Problem) => p.limit ?? 0;
const valueError = (sentence: string, ctx?: Record<string, unknown>): PydanticError => ({ type: 'value_error', msg: `Value error, ${sentence}`, ...(ctx ? { ctx } : {}) });

/** Each code's pydantic error, before the core's `note` is added. Exhaustive: a new code fails to compile here. */
const ERRORS: Record<ProblemCode, (p: Problem) => PydanticError> = {
  missing: () => ({ type: 'missing', msg: 'Field required' }),
  extra: () => ({ type: 'extra_forbidden', msg: 'Extra inputs are not permitted' }),
  not_object: () => ({ type: 'model_attributes_type', msg: 'Input should be a valid dictionary or object to extract fields from' }),
  not_string: () => ({ type: 'string_type', msg: 'Input should be a valid string' }),
  not_list: () => ({ type: 'list_type', msg: 'Input should be a valid list' }),
  not_integer: () => ({ type: 'int_type', msg: 'Input should be a valid integer' }),
  not_whole_number: () => ({ type: 'int_type', msg: 'Input should be a non-negative integer' }),
  lone_surrogate: () => ({ type: 'string_unicode', msg: 'Input should be a valid string, it holds a lone UTF-16 surrogate' }),
  too_short: (p) => stringTooShort(limitOf(p)),
  too_long: (p) => stringTooLong(limitOf(p)),
  below_minimum: (p) => ({ type: 'greater_than_equal', msg: `Input should be greater than or equal to ${limitOf(p)}`, ctx: { ge: limitOf(p) } }),
  not_one_of: (p) => {
    const text = literalText(Array.isArray(p.expected) ? p.expected : [String(p.expected)]);
    return { type: 'literal_error', msg: `Input should be ${text}`, ctx: { expected: text } };
  },
  pattern_mismatch: (p) => ({ type: 'string_pattern_mismatch', msg: `String should match pattern '${String(p.expected)}'`, ctx: { pattern: p.expected } }),
  line_break: (p) => valueError(`${field(p)} must not contain a line break`),
  signature_text: (p) => valueError(`${field(p)} must be 64 bytes in canonical unpadded base64url (86 characters)`),
  slice_and_slice_hash: () => valueError('give either slice or slice_hash, not both'),
  slice_hash_mismatch: (p) => valueError(`slice_hash is not the hash of slice (${String(p.expected)})`),
  hint_too_deep: (p) => valueError(`hint nests at most ${limitOf(p)} deep`, { max_depth: limitOf(p) }),
  hint_too_big: (p) => valueError(`hint is at most ${limitOf(p)} bytes of JSON`, { max_bytes: limitOf(p) }),
  quorum_set_too_deep: (p) => valueError(`quorum sets nest at most ${limitOf(p)} deep`, { max_depth: limitOf(p) }),
  quorum_set_size: (p) => valueError(`a quorum set names 1 to ${limitOf(p)} nodes, this one names ${p.count ?? 0}`, { min_nodes: 1, max_nodes: limitOf(p), nodes: p.count ?? 0 }),
  self_in_slice: () => valueError('a node does not list itself in its slice: self is implicit'),
  node_twice: () => valueError('node listed twice'),
  threshold_range: (p) => valueError(`t must be between 1 and the number of entries (${limitOf(p)})`, { entries: limitOf(p) }),
  not_posted_item: () => valueError('item must be the id of the item it is posted with'),
  not_item_type: (p) => valueError(`type must be ${String(p.expected)}`),
  not_posting_author: () => valueError('author must be the node posting the item'),
  not_stored_title: (p) => valueError(`title must be the file's title as stored: ${JSON.stringify(p.expected)}`),
  not_stored_media_type: (p) => valueError(`media_type must be the file's media type as stored: ${JSON.stringify(p.expected)}`),
  // A value with no RFC 8785 form reaches an answer only as a broken precondition; the core's
  // reason is the whole message, as it always was.
  no_canonical_form: (p) => ({ type: 'value_error', msg: p.note ?? 'no canonical JSON form' }),
  not_phone_number: () => valueError('phone must be an E.164 number such as +41791234567'),
  not_absolute_url: () => ({ type: 'url_parsing', msg: 'Value error, not an absolute URL' }),
  not_http_url: () => ({ type: 'url_scheme', msg: 'Value error, a peer URL must be http or https' }),
  url_with_extras: () => valueError('a peer URL has no query, fragment or credentials'),
  own_url: () => valueError('that is this relay'),
  // The multipart parser's own reason is part of the sentence, not a note after it.
  not_multipart: (p) => valueError(`not a usable multipart request: ${p.note ?? ''}`),
  form_field_too_big: (p) => valueError(`a form field holds at most ${limitOf(p)} bytes`),
  file_parts: () => valueError('send one file part'),
  form_parts: (p) => valueError(`a form holds one file part and at most ${limitOf(p)} fields`),
  not_author_signature: () => valueError("sig is not the author's Ed25519 signature over this statement"),
  not_declarer_signature: () => valueError("sig is not the node's Ed25519 signature over this declaration"),
  unknown_slice_hash: () => valueError('unknown slice_hash: publish the slice with POST /slice first, or send slice instead'),
  nul_character: () => valueError('must not contain U+0000 (NUL)'),
  not_item_id: () => valueError('item id must be 64 lowercase hex characters (a SHA-256 digest)'),
  // A path parameter named `id` is a node's id; a field named for the node says so itself.
  not_node_id: (p) => valueError(`${field(p) === 'id' ? 'node id' : field(p)} must be 64 lowercase hex characters`),
  not_author_id: () => valueError('each author must be a node id (64 lowercase hex characters)'),
  // The key check's own reason (core/relay/node-id.ts) is the sentence.
  unacceptable_node_id: (p) => valueError(p.note ?? 'node_id is not an acceptable key'),
  not_this_relay: (p) => valueError(`relay must be this relay's base URL ${String(p.expected)}`, { expected: p.expected }),
  created_at_skew: (p) => valueError(`created_at is ${p.count ?? 0} s away from the relay clock (at most ${limitOf(p)} s)`, { now: p.nowSeconds }),
  // The rule's own sentence (domain/statement-time.ts), which a peer's refused vote records too.
  created_at_ahead: (p) => valueError(p.note ?? 'created_at is in the future', { now: p.nowSeconds }),
  updated_ms_ahead: (p) => valueError(`updated_ms is more than ${limitOf(p)} s ahead of this relay's clock`, { now_ms: p.nowMs }),
  not_node_signature: () => valueError('sig is not a signature of this document by node_id (Ed25519 over RFC 8785 bytes without sig)'),
  not_voter_signature: () => valueError("sig is not the voter's Ed25519 signature over this vote"),
  not_path_item: () => valueError('item must equal the id in the path'),
  media_type_too_long: (p) => valueError(`the file part's Content-Type is at most ${limitOf(p)} characters`, { max_length: limitOf(p) }),
  authorship_not_json: () => ({ type: 'json_invalid', msg: 'Value error, authorship must be the x.item/1 statement as JSON text' }),
  not_slice_member: () => valueError('this node is not a top-level validator of your slice'),
  above_maximum: (p) => ({ type: 'less_than_equal', msg: `Input should be less than or equal to ${limitOf(p)}`, ctx: { le: limitOf(p) } }),
  too_many_items: (p) => ({ type: 'too_long', msg: `List should have at most ${plural(limitOf(p), 'item')}`, ctx: { max_length: limitOf(p) } }),
  not_pairing_token: () => valueError('not a pairing token'),
};

/** Codes whose wording says the core's `note` itself, rather than after the message in parentheses. */
const NOTE_IN_MESSAGE: ReadonlySet<ProblemCode> = new Set(['no_canonical_form', 'not_multipart', 'unacceptable_node_id', 'created_at_ahead']);

/** The pydantic error a core problem answers as, in pydantic's words plus the core's note. */
export function coreProblemError(problem: Problem): PydanticError {
  const error = ERRORS[problem.code](problem);
  if (problem.note === undefined || NOTE_IN_MESSAGE.has(problem.code)) return error;
  return { ...error, msg: `${error.msg} (${problem.note})` };
}
