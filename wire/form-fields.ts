import { z } from 'zod';

/**
 * Form fields as zod schemas (the bench's forms, `wire/bench/bench-schemas.ts`), with their
 * validation errors named in pydantic v2's exact words (`params.pydantic`, read by
 * `problem-detail.ts`), so the 422 bodies match what a FastAPI implementation of the spec returns.
 * The same schemas produce the OpenAPI document, so the documented and the enforced rules cannot
 * drift. The server validates with them (`server/http/form-schema.ts`, `parseForm`).
 *
 * Every form value travels as a string (spec: "All form values are transmitted as strings").
 */

/** A numeric form value's bounds, named as pydantic names them in `ctx`. */
export interface NumberBounds {
  gt?: number;
  ge?: number;
  lt?: number;
  le?: number;
}

/** pydantic-style description of a value that is not a number. */
const FLOAT_PARSING_MSG = 'Input should be a valid number, unable to parse string as a number';

/**
 * Parses numeric text as Python's `float()` (and so pydantic) accepts it: surrounding white
 * space, sign, digits with single underscores between them, fraction, exponent, `inf`, `nan`.
 */
export function parseNumericText(text: string): number | undefined {
  const t = text.trim();
  if (/^[+-]?(inf|infinity)$/i.test(t)) return t.startsWith('-') ? -Infinity : Infinity;
  if (/^[+-]?nan$/i.test(t)) return NaN;
  const digits = String.raw`\d(?:_?\d)*`;
  const re = new RegExp(String.raw`^[+-]?(?:${digits}(?:\.(?:${digits})?)?|\.${digits})(?:[eE][+-]?${digits})?$`);
  if (!re.test(t)) return undefined;
  return Number(t.replaceAll('_', ''));
}

/** pydantic's words for text that is no integer. */
const INT_PARSING_MSG = 'Input should be a valid integer, unable to parse string as an integer';

/**
 * Parses whole-number text as pydantic reads an `int` from a string: surrounding white space, a
 * sign, digits with single underscores between them, and a fraction of zeros only (`"10.0"`);
 * `"1.5"`, `"1e2"` and `"inf"` are no integer.
 */
export function parseWholeNumberText(text: string): number | undefined {
  const t = text.trim();
  if (!/^[+-]?\d(?:_?\d)*(?:\.0*)?$/.test(t)) return undefined;
  return Number(t.replaceAll('_', ''));
}

/** An optional numeric-text form field with a default and bounds (both checked after parsing). */
/** A number within the bounds given (pydantic's gt/ge/lt/le), checked after the text is parsed. */
function boundedNumber(bounds: NumberBounds): z.ZodNumber {
  let n = z.number();
  if (bounds.gt !== undefined) n = n.gt(bounds.gt);
  if (bounds.ge !== undefined) n = n.gte(bounds.ge);
  if (bounds.lt !== undefined) n = n.lt(bounds.lt);
  if (bounds.le !== undefined) n = n.lte(bounds.le);
  return n;
}

export function numericTextField(options: NumberBounds & { default: string; description: string }) {
  const n = boundedNumber(options);
  return z
    .string()
    .default(options.default)
    .transform((text, ctx) => {
      const value = parseNumericText(text);
      if (value === undefined) {
        ctx.addIssue({ code: 'custom', message: FLOAT_PARSING_MSG, params: { pydantic: { type: 'float_parsing', msg: FLOAT_PARSING_MSG } } });
        return z.NEVER;
      }
      return value;
    })
    .pipe(n)
    .meta({ description: options.description });
}

/**
 * An optional numeric query parameter with bounds: the same numeric text as a form field (so
 * `?wait=` and `?wait=soon` are pydantic's `float_parsing`, not a number JavaScript made of them),
 * documented as the number it stands for.
 */
export function numericTextParam(options: NumberBounds & { description: string; whole?: boolean }) {
  // `whole`: the text is checked whole before the bounds (zod's int() would add a second error past 2^53).
  const n = boundedNumber(options);
  return z
    .preprocess((raw, ctx) => {
      if (typeof raw !== 'string') return raw;
      const value = options.whole ? parseWholeNumberText(raw) : parseNumericText(raw);
      if (value === undefined) {
        const [type, message] = options.whole ? ['int_parsing', INT_PARSING_MSG] : ['float_parsing', FLOAT_PARSING_MSG];
        ctx.addIssue({ code: 'custom', message, input: raw, params: { pydantic: { type, msg: message } } });
        return z.NEVER;
      }
      return value;
    }, n)
    .optional()
    .meta({ description: options.description });
}

/** A text form field: required unless a default is given. */
export function textField(options: { minLength?: number; maxLength?: number; pattern?: RegExp; default?: string; description: string }) {
  let s = z.string();
  if (options.minLength !== undefined) s = s.min(options.minLength);
  if (options.maxLength !== undefined) s = s.max(options.maxLength);
  if (options.pattern !== undefined) s = s.regex(options.pattern);
  const field = options.default === undefined ? s : s.default(options.default);
  return field.meta({ description: options.description });
}

/**
 * How a form's text is read: `utf8`, or `latin1` (ISO-8859-1 exactly, byte for byte), named as
 * busboy names its decoders (its `defCharset`).
 */
export type FormTextCharset = 'utf8' | 'latin1';

// US-ASCII is a subset of UTF-8: read as UTF-8 (its IANA aliases too). A client declaring it
// sends no other byte; one that does is read as UTF-8, as with no charset at all.
const UTF8_CHARSETS = new Set(['utf-8', 'utf8', 'us-ascii', 'ascii', 'us', 'ansi_x3.4-1968', 'ansi_x3.4-1986', 'iso646-us', 'iso_646.irv:1991', 'iso-ir-6', 'ibm367', 'cp367', 'csascii']);
// The ISO-8859-1 names busboy decodes as Latin-1 (Apache HttpClient's UrlEncodedFormEntity sends
// `charset=ISO-8859-1` by default). windows-1252 and cp1252 it decodes as Latin-1 too, which is
// not what they are (0x80-0x9f differ): refused with the other charsets.
const LATIN1_CHARSETS = new Set(['iso-8859-1', 'iso8859-1', 'iso88591', 'iso_8859-1', 'iso_8859-1:1987', 'latin1']);

const CHARSET_PARAM = /;\s*charset\s*=\s*("?)([^";\s]*)\1/gi;

/**
 * How to read a form whose (or a form part's) `Content-Type` is `contentType`, from the charset it
 * declares: `{ read }` for none, UTF-8 or US-ASCII (`utf8`) and ISO-8859-1 (`latin1`), else the
 * charset to refuse, in lower case. Any other is refused rather than read, so no field is lost
 * silently: busboy reads a multipart form's own `charset` not at all (its parts as UTF-8), and
 * hands a field in a charset it cannot decode (`utf-16`) on as undefined, which read as a field
 * never sent. A parser reads a form with the charset parameter dropped (`contentTypeWithoutCharset`)
 * and `read` as its default, so both form types, and US-ASCII's aliases, are read alike.
 */
export function formCharsetOf(contentType: string | undefined): { read: FormTextCharset; declared?: string } | { refused: string } {
  const declared = [...new Set([...(contentType ?? '').matchAll(CHARSET_PARAM)].map((m) => (m[2] ?? '').toLowerCase()))];
  if (declared.length === 0) return { read: 'utf8' };
  // Names are one charset when they are read alike (`utf-8` and `utf8`, `latin1` and `iso-8859-1`):
  // the form is then read the same whichever a parser took. Two read otherwise, or one not read at
  // all, are refused: a parser reading either one could read the form otherwise.
  const reads = new Set(declared.map(readAs));
  const [read] = reads;
  // Echoed in the refusal: bounded, as a header may be long.
  if (reads.size > 1 || read === undefined) return { refused: declared.join(', ').slice(0, 40) };
  return { read, declared: declared[0] };
}

function readAs(charset: string): FormTextCharset | undefined {
  if (UTF8_CHARSETS.has(charset)) return 'utf8';
  if (LATIN1_CHARSETS.has(charset)) return 'latin1';
  return undefined;
}

/** `contentType` without its `charset` parameters, every one (the charset read is given apart: `formCharsetOf`). */
export function contentTypeWithoutCharset(contentType: string): string {
  return contentType.replace(CHARSET_PARAM, '');
}

/** An uploaded file, streamed and hashed by `parse-form.ts`. */
export interface UploadedFile {
  filename: string;
  mimeType: string;
  bytes: Uint8Array;
  sizeBytes: number;
  /** Lower-case hex SHA-256 of `bytes`, computed while streaming. */
  sha256: string;
}

export function isUploadedFile(value: unknown): value is UploadedFile {
  return typeof value === 'object' && value !== null && 'bytes' in value && (value as { bytes: unknown }).bytes instanceof Uint8Array;
}

/** A required file field (`multipart/form-data` part with a filename). */
export function fileField(description: string) {
  return z
    .custom<UploadedFile>(isUploadedFile, {
      params: {
        pydantic: { type: 'value_error', msg: "Value error, Expected UploadFile, received: <class 'str'>", ctx: { error: {} } },
      },
    })
    .meta({ type: 'string', format: 'binary', description });
}
