import { parseEmailAddress } from './email-address.js';

/**
 * The waitlist form of bench-service spec 0.3.4 ("Waitlist input"): kind, email, note, csrf, all
 * strings with defaults "person", "", "", "". This module turns the submitted fields into a typed
 * value or into FastAPI/pydantic v2 validation errors, every failing field at once, in field order.
 * The CSRF token is only carried through here; the router checks it (403, not 422).
 */

/** Who is asking to join: a single person, a team or organisation, or a software agent acting for someone. */
// Kept with the waitlist's store (its table checks them); re-exported for the form and pages.
import { WAITLIST_KINDS, type WaitlistKind } from '../../storage/bench/waitlist-store.js';
export { WAITLIST_KINDS, type WaitlistKind };

/** Enough for "what I would test and on which boards", short enough that the list cannot be used as storage. */
export const NOTE_MAX_CHARS = 500;

/**
 * The characters a note may hold: any but control characters, except tab and line breaks. A NUL
 * could not even be stored on PostgreSQL (an anonymous 500), and the others would corrupt the
 * pages and logs that show the list.
 */
export const NOTE_PATTERN = '^[^\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f]*$';

export const WAITLIST_FIELDS = ['kind', 'email', 'note', 'csrf'] as const;

/** One item of a 422 body, keys in pydantic's order: type, loc, msg, input, ctx. */
export interface ValidationErrorItem {
  type: string;
  loc: (string | number)[];
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

export interface WaitlistForm {
  kind: WaitlistKind;
  /** Normalised (see email-address.ts). */
  email: string;
  note: string;
  csrf: string;
}

export type WaitlistFormResult = { ok: true; form: WaitlistForm } | { ok: false; errors: ValidationErrorItem[] };

/** Pydantic's wording for a Literal: `'a', 'b' or 'c'`. */
function literalList(values: readonly string[]): string {
  const quoted = values.map((v) => `'${v}'`);
  return quoted.length <= 1 ? quoted.join('') : `${quoted.slice(0, -1).join(', ')} or ${quoted[quoted.length - 1]}`;
}

function isWaitlistKind(value: string): value is WaitlistKind {
  return (WAITLIST_KINDS as readonly string[]).includes(value);
}

/**
 * Validates submitted form fields. `fields` maps a field name to every value it was given (a form
 * may repeat a name); names not in the spec are ignored, as FastAPI does.
 */
export function parseWaitlistForm(fields: ReadonlyMap<string, readonly string[]>): WaitlistFormResult {
  const errors: ValidationErrorItem[] = [];
  const single = (name: (typeof WAITLIST_FIELDS)[number], fallback: string): string | undefined => {
    const values = fields.get(name) ?? [];
    if (values.length > 1) {
      // Ambiguous input is refused rather than resolved by an arbitrary first/last rule.
      errors.push({
        type: 'value_error',
        loc: ['body', name],
        msg: `Value error, the field '${name}' was sent ${values.length} times; send it once`,
        input: [...values],
        ctx: { error: `the field '${name}' was sent ${values.length} times; send it once` },
      });
      return undefined;
    }
    return values[0] ?? fallback;
  };

  const rawKind = single('kind', 'person');
  let kind: WaitlistKind | undefined;
  if (rawKind !== undefined) {
    if (isWaitlistKind(rawKind)) kind = rawKind;
    else {
      const expected = literalList(WAITLIST_KINDS);
      errors.push({ type: 'literal_error', loc: ['body', 'kind'], msg: `Input should be ${expected}`, input: rawKind, ctx: { expected } });
    }
  }

  const rawEmail = single('email', '');
  let email: string | undefined;
  if (rawEmail !== undefined) {
    const verdict = parseEmailAddress(rawEmail);
    if (verdict.ok) email = verdict.email;
    else {
      errors.push({
        type: 'value_error',
        loc: ['body', 'email'],
        msg: `value is not a valid email address: ${verdict.reason}`,
        input: rawEmail,
        ctx: { reason: verdict.reason },
      });
    }
  }

  const note = single('note', '');
  if (note !== undefined && [...note].length > NOTE_MAX_CHARS) {
    errors.push({
      type: 'string_too_long',
      loc: ['body', 'note'],
      msg: `String should have at most ${NOTE_MAX_CHARS} characters`,
      input: note,
      ctx: { max_length: NOTE_MAX_CHARS },
    });
  } else if (note !== undefined && !new RegExp(NOTE_PATTERN).test(note)) {
    errors.push({
      type: 'string_pattern_mismatch',
      loc: ['body', 'note'],
      msg: `String should match pattern '${NOTE_PATTERN}'`,
      input: note,
      ctx: { pattern: NOTE_PATTERN },
    });
  }

  const csrf = single('csrf', '');

  if (errors.length > 0 || kind === undefined || email === undefined || note === undefined || csrf === undefined) {
    return { ok: false, errors };
  }
  return { ok: true, form: { kind, email, note: note.trim(), csrf } };
}
