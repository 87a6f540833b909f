/**
 * Validation results of the relay core. Issues follow pydantic v2's error shape so the HTTP layer
 * can put them straight into a FastAPI-style `detail` array: `loc` is the path inside the value
 * that was validated (the HTTP layer prefixes `body`), `type` a stable machine code
 * (`missing`, `string_type`, `string_too_long`, `literal_error`, `value_error`, ...), `msg` for humans.
 */
export interface Issue {
  loc: string[];
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

/** Either the typed value or the list of everything wrong with the input (never both). */
export type Validated<T> = { ok: true; value: T } | { ok: false; issues: Issue[] };

/** The one error type of the relay core: a caller broke a precondition; `issues` say which. */
export class RelayError extends Error {
  override readonly name = 'RelayError';
  constructor(
    message: string,
    readonly issues: Issue[] = [],
  ) {
    super(message);
  }
}

/** Returns the value of a `Validated`, or throws `RelayError` carrying its issues. */
export function unwrap<T>(result: Validated<T>, what: string): T {
  if (result.ok) return result.value;
  const first = result.issues[0];
  const where = first && first.loc.length > 0 ? ` at ${first.loc.join('.')}` : '';
  throw new RelayError(`invalid ${what}${where}: ${first?.msg ?? 'unknown problem'}`, result.issues);
}

/** True for a plain JSON-like object (not an array, not a class instance). */
/**
 * The issue for a document (or a nested one) that is no JSON object, in the words FastAPI answers
 * for a model: every relay body and the bench's say the same (wire/problem-detail.ts).
 */
export function notAnObjectIssue(loc: string[], input: unknown): Issue {
  return { loc, msg: 'Input should be a valid dictionary or object to extract fields from', type: 'model_attributes_type', input };
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when the string holds a lone UTF-16 surrogate (it has no UTF-8 encoding of its own). */
export function hasLoneSurrogate(s: string): boolean {
  return LONE_SURROGATE.test(s);
}

/** `s` with each lone UTF-16 surrogate replaced by U+FFFD (ES2024's `toWellFormed`), so it has a UTF-8 encoding. */
export function withLoneSurrogatesReplaced(s: string): string {
  return s.replace(LONE_SURROGATES, '\ufffd');
}
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

/** Length in Unicode code points, the unit of every relay length limit. */
export function codePointLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}
