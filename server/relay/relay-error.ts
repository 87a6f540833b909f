import type { ErrorRequestHandler } from 'express';
import type { z } from 'zod';
import { RelayError as CoreRelayError } from '../../core/relay/index.js';
import { createErrorHandler } from '../http/error-handler.js';
import { HttpError, type ValidationErrorItem } from '../http/http-error.js';
import type { Logger } from '../http/logger.js';

/**
 * The relay uses the HTTP layer's one error type (`server/http/http-error.ts`): `HttpError(status,
 * detail, headers)` written as `{"detail": ...}` by the one handler. This module adds what the relay
 * needs on top: zod and core issues as pydantic-style 422 entries, and a short way to make one.
 */
export type ValidationIssue = ValidationErrorItem;

/** A 422 carrying exactly one issue (`type` defaults to pydantic's `value_error`). */
export function invalidInput(loc: (string | number)[], msg: string, input: unknown, type = 'value_error', ctx?: Record<string, unknown>): HttpError {
  return new HttpError(422, [issue(type, loc, msg, input, ctx)]);
}

/** Builds an issue with the keys in wire order and `ctx` only when there is one. */
export function issue(type: string, loc: (string | number)[], msg: string, input: unknown, ctx?: Record<string, unknown>): ValidationIssue {
  const out: ValidationIssue = { type, loc, msg, input: input === undefined ? null : input };
  if (ctx !== undefined) out.ctx = ctx;
  return out;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = root;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

/** Maps zod issues to FastAPI/pydantic names so the wire format matches the bench service. */
export function zodIssuesToValidation(issues: readonly z.core.$ZodIssue[], where: string, root: unknown): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  for (const zi of issues) {
    const path = zi.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
    const loc = [where, ...path];
    const input = valueAt(root, zi.path);
    switch (zi.code) {
      case 'invalid_type':
        if (input === undefined) out.push(issue('missing', loc, 'Field required', null));
        else out.push(issue(`${zi.expected}_type`, loc, `Input should be a valid ${zi.expected}`, input));
        break;
      case 'too_big':
        if (zi.origin === 'string') out.push(issue('string_too_long', loc, `String should have at most ${String(zi.maximum)} characters`, input, { max_length: Number(zi.maximum) }));
        else if (zi.origin === 'array') out.push(issue('too_long', loc, `List should have at most ${String(zi.maximum)} items`, input, { max_length: Number(zi.maximum) }));
        else out.push(issue('less_than_equal', loc, `Input should be less than or equal to ${String(zi.maximum)}`, input, { le: Number(zi.maximum) }));
        break;
      case 'too_small':
        if (zi.origin === 'string') out.push(issue('string_too_short', loc, `String should have at least ${String(zi.minimum)} characters`, input, { min_length: Number(zi.minimum) }));
        else if (zi.origin === 'array') out.push(issue('too_short', loc, `List should have at least ${String(zi.minimum)} items`, input, { min_length: Number(zi.minimum) }));
        else out.push(issue('greater_than_equal', loc, `Input should be greater than or equal to ${String(zi.minimum)}`, input, { ge: Number(zi.minimum) }));
        break;
      case 'invalid_format':
        out.push(issue('string_pattern_mismatch', loc, zi.message, input, 'pattern' in zi && typeof zi.pattern === 'string' ? { pattern: zi.pattern } : undefined));
        break;
      case 'invalid_value':
        out.push(issue('enum', loc, `Input should be ${zi.values.map((v) => JSON.stringify(v)).join(' or ')}`, input, { expected: zi.values.map((v) => JSON.stringify(v)).join(', ') }));
        break;
      case 'unrecognized_keys':
        for (const key of zi.keys) out.push(issue('extra_forbidden', [...loc, key], 'Extra inputs are not permitted', valueAt(root, [...zi.path, key])));
        break;
      case 'custom': {
        const params = (zi.params ?? {}) as { type?: string; ctx?: Record<string, unknown> };
        out.push(issue(params.type ?? 'value_error', loc, zi.message, input, params.ctx));
        break;
      }
      default:
        out.push(issue('value_error', loc, zi.message, input));
    }
  }
  return out;
}

/** Parses `input` with `schema`, throwing a 422 `RelayError` located under `where` (body, query, path). */
export function parseOr422<T>(schema: z.ZodType<T>, input: unknown, where: string): T {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new HttpError(422, zodIssuesToValidation(result.error.issues, where, input));
}

/**
 * The relay's error handler: translates what only the relay meets (express.json failures, a core
 * precondition that slipped past a route's checks) into `HttpError`s, then hands every error to the
 * HTTP layer's one handler, which writes them, logs unknown ones with their cause as a generic 500,
 * and closes connections answered before their body was read.
 */
export function relayErrorHandler(logger: Logger): ErrorRequestHandler {
  const common = createErrorHandler(logger);
  return (err: unknown, req, res, next) => {
    common(translate(err), req, res, next);
  };
}

function translate(err: unknown): unknown {
  if (err instanceof CoreRelayError) {
    const items = err.issues.length > 0 ? err.issues.map((i) => issue(i.type, ['body', ...i.loc], i.msg, i.input, i.ctx)) : [issue('value_error', ['body'], `Value error, ${err.message}`, null)];
    return new HttpError(422, items);
  }
  const e = err as { type?: unknown; body?: unknown } | null;
  switch (e?.type) {
    case 'entity.parse.failed':
      return new HttpError(422, [issue('json_invalid', ['body', 0], 'JSON decode error', typeof e.body === 'string' ? e.body.slice(0, 200) : null, { error: 'invalid JSON' })]);
    case 'entity.too.large':
      return new HttpError(413, 'request body too large');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new HttpError(415, 'unsupported request encoding');
    default:
      return err;
  }
}
