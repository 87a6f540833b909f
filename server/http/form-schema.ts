import { z } from 'zod';
import { type ValidationErrorItem, validationFailed } from './http-error.js';

/**
 * Form fields as zod schemas, and their validation errors in pydantic v2's exact words, so the
 * 422 bodies match what a FastAPI implementation of the spec returns. The same schemas produce
 * the OpenAPI document (`openapi.ts`), so the documented and the enforced rules cannot drift.
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

/** An optional numeric-text form field with a default and bounds (both checked after parsing). */
export function numericTextField(options: NumberBounds & { default: string; description: string }) {
  let n = z.number();
  if (options.gt !== undefined) n = n.gt(options.gt);
  if (options.ge !== undefined) n = n.gte(options.ge);
  if (options.lt !== undefined) n = n.lt(options.lt);
  if (options.le !== undefined) n = n.lte(options.le);
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

/** A text form field: required unless a default is given. */
export function textField(options: { minLength?: number; maxLength?: number; pattern?: RegExp; default?: string; description: string }) {
  let s = z.string();
  if (options.minLength !== undefined) s = s.min(options.minLength);
  if (options.maxLength !== undefined) s = s.max(options.maxLength);
  if (options.pattern !== undefined) s = s.regex(options.pattern);
  const field = options.default === undefined ? s : s.default(options.default);
  return field.meta({ description: options.description });
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

/** Extra context a field attaches to an issue so it maps to one exact pydantic error. */
interface PydanticParams {
  type: string;
  msg: string;
  ctx?: Record<string, unknown>;
}

function pydanticParams(issue: z.core.$ZodIssue): PydanticParams | undefined {
  if (issue.code !== 'custom') return undefined;
  const p = (issue.params as { pydantic?: PydanticParams } | undefined)?.pydantic;
  return p;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** Maps one zod issue on a present value to pydantic's `type`, `msg` and `ctx`. */
function describeIssue(issue: z.core.$ZodIssue): PydanticParams {
  const own = pydanticParams(issue);
  if (own) return own;
  switch (issue.code) {
    case 'too_small':
      if (issue.origin === 'string') {
        const min = Number(issue.minimum);
        return { type: 'string_too_short', msg: `String should have at least ${plural(min, 'character')}`, ctx: { min_length: min } };
      }
      if (issue.origin === 'number') {
        const min = Number(issue.minimum);
        return issue.inclusive
          ? { type: 'greater_than_equal', msg: `Input should be greater than or equal to ${min}`, ctx: { ge: min } }
          : { type: 'greater_than', msg: `Input should be greater than ${min}`, ctx: { gt: min } };
      }
      break;
    case 'too_big':
      if (issue.origin === 'string') {
        const max = Number(issue.maximum);
        return { type: 'string_too_long', msg: `String should have at most ${plural(max, 'character')}`, ctx: { max_length: max } };
      }
      if (issue.origin === 'number') {
        const max = Number(issue.maximum);
        return issue.inclusive
          ? { type: 'less_than_equal', msg: `Input should be less than or equal to ${max}`, ctx: { le: max } }
          : { type: 'less_than', msg: `Input should be less than ${max}`, ctx: { lt: max } };
      }
      break;
    case 'invalid_format':
      if (issue.format === 'regex' && 'pattern' in issue && typeof issue.pattern === 'string') {
        // zod reports `/source/flags`; pydantic shows the pattern source alone.
        const source = issue.pattern.replace(/^\/(.*)\/[a-z]*$/s, '$1');
        return { type: 'string_pattern_mismatch', msg: `String should match pattern '${source}'`, ctx: { pattern: source } };
      }
      break;
    case 'invalid_type':
      if (issue.expected === 'string') return { type: 'string_type', msg: 'Input should be a valid string' };
      // zod refuses NaN and ±Infinity as numbers; pydantic's word for that (allow_inf_nan=False).
      if (issue.expected === 'number') return { type: 'finite_number', msg: 'Input should be a finite number' };
      break;
    default:
      break;
  }
  return { type: 'value_error', msg: `Value error, ${issue.message}`, ctx: { error: {} } };
}

/** What a validation error shows as `input`: the raw value as sent (a file as its filename). */
function inputOf(raw: unknown): unknown {
  if (raw === undefined) return null;
  if (isUploadedFile(raw)) return raw.filename;
  return raw;
}

/**
 * Validates raw form values (`string` or `UploadedFile` per field) with `schema`. Empty strings
 * count as absent, as FastAPI treats empty form values. On failure throws a 422 `HttpError`
 * listing one error per failing field (pydantic stops at a field's first failed constraint), in
 * the schema's field order.
 */
export function parseForm<S extends z.ZodObject>(schema: S, raw: Readonly<Record<string, unknown>>): z.output<S> {
  const present: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (value !== '' && value !== undefined) present[key] = value;
  }
  // `reportInput`: an issue on a default (an absent field) carries the value that failed.
  const result = schema.safeParse(present, { reportInput: true });
  if (result.success) return result.data;
  const byField = new Map<string, ValidationErrorItem>();
  for (const issue of result.error.issues) {
    const field = String(issue.path[0] ?? '');
    if (byField.has(field)) continue;
    const value = present[field];
    if (value === undefined) {
      // Absent: "missing" when no default stood in (the issue saw no input). An absent field whose
      // default fails its own bounds (limits set against the defaults) reports the default's real error.
      if (issue.input === undefined) {
        byField.set(field, { type: 'missing', loc: ['body', field], msg: 'Field required', input: null });
        continue;
      }
      const { type, msg, ctx } = describeIssue(issue);
      byField.set(field, { type, loc: ['body', field], msg, input: issue.input ?? null, ...(ctx ? { ctx } : {}) });
      continue;
    }
    const { type, msg, ctx } = describeIssue(issue);
    byField.set(field, { type, loc: ['body', field], msg, input: inputOf(value), ...(ctx ? { ctx } : {}) });
  }
  const order = Object.keys(schema.shape);
  const items = [...byField.entries()].sort(([a], [b]) => order.indexOf(a) - order.indexOf(b)).map(([, item]) => item);
  throw validationFailed(items);
}
