import type { z } from 'zod';
import { type ValidationErrorItem, safeParseForProblems, zodIssuesToValidation } from '../../wire/problem-detail.js';

/**
 * The one error type of the HTTP layer. Handlers throw it; the one error handler
 * (`error-handler.ts`) writes it as FastAPI does: `{"detail": <string or validation errors>}`.
 */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    readonly detail: string | ValidationErrorItem[],
    /** Extra response headers, e.g. `WWW-Authenticate`, `Allow`, `Retry-After`. */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(typeof detail === 'string' ? detail : `validation failed: ${detail.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; ')}`);
  }
}

/** A 422 with every failing field, in field order. */
export function validationFailed(items: ValidationErrorItem[]): HttpError {
  return new HttpError(422, items);
}

/** A `value_error` on one body field, worded as pydantic words a failed custom validator. */
export function fieldValueError(field: string, message: string, input: unknown): HttpError {
  return validationFailed([{ type: 'value_error', loc: ['body', field], msg: `Value error, ${message}`, input, ctx: { error: {} } }]);
}

/** Parses `input` with `schema`, throwing a 422 `HttpError` located under `where` (body, query, path). */
export function parseOr422<T>(schema: z.ZodType<T>, input: unknown, where: string): T {
  const result = safeParseForProblems(schema, input);
  if (result.success) return result.data;
  throw new HttpError(422, zodIssuesToValidation(result.error.issues, where, input));
}
