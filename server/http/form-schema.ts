import { z } from 'zod';
import { type ValidationErrorItem, pydanticErrorOf, safeParseForProblems } from '../../wire/problem-detail.js';
import { isUploadedFile } from '../../wire/form-fields.js';
import { validationFailed } from './http-error.js';

/**
 * Validation of raw form values with the wire's form schemas (`wire/form-fields.ts`), failing
 * with pydantic's 422 in field order.
 */

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
  const result = safeParseForProblems(schema, present, { reportInput: true });
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
      const { type, msg, ctx } = pydanticErrorOf(issue);
      byField.set(field, { type, loc: ['body', field], msg, input: issue.input ?? null, ...(ctx ? { ctx } : {}) });
      continue;
    }
    const { type, msg, ctx } = pydanticErrorOf(issue);
    byField.set(field, { type, loc: ['body', field], msg, input: inputOf(value), ...(ctx ? { ctx } : {}) });
  }
  const order = Object.keys(schema.shape);
  const items = [...byField.entries()].sort(([a], [b]) => order.indexOf(a) - order.indexOf(b)).map(([, item]) => item);
  throw validationFailed(items);
}
