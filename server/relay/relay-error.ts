import type { ErrorRequestHandler } from 'express';
import type { z } from 'zod';
import { RelayError as CoreRelayError } from '../../core/relay/index.js';

/**
 * One entry of a FastAPI-style 422 body. Key order matters on the wire (type, loc, msg, input,
 * ctx) because clients written against the 0.9.3 relay compare bodies textually in their tests.
 */
export interface ValidationIssue {
  type: string;
  loc: (string | number)[];
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

/**
 * The relay's one error type. `status` is the HTTP status; `detail` is either a message
 * (`{"detail": "..."}`) or, for 422, the list of validation issues. `headers` carries e.g.
 * `Retry-After` for 429 or `WWW-Authenticate` for 401.
 */
export class RelayError extends Error {
  override readonly name = 'RelayError';
  constructor(
    readonly status: number,
    readonly detail: string | ValidationIssue[],
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof detail === 'string' ? detail : detail.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; '));
  }

  /** A 422 carrying exactly one issue. */
  static invalid(loc: (string | number)[], msg: string, input: unknown, type = 'value_error', ctx?: Record<string, unknown>): RelayError {
    return new RelayError(422, [issue(type, loc, msg, input, ctx)]);
  }
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
  throw new RelayError(422, zodIssuesToValidation(result.error.issues, where, input));
}

/**
 * The one handler. RelayErrors keep their status and detail; body-parser failures become 422
 * `json_invalid` (as FastAPI does) or 413; anything else is a generic 500, logged with its cause,
 * and no stack leaves the server.
 */
export function relayErrorHandler(log: (message: string, cause: unknown) => void): ErrorRequestHandler {
  return (err: unknown, _req, res, next) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    if (err instanceof RelayError) {
      res.status(err.status).set(err.headers).json({ detail: err.detail });
      return;
    }
    // A core precondition that slipped past the route's own checks is still the caller's input.
    if (err instanceof CoreRelayError) {
      const issues = err.issues.length > 0 ? err.issues.map((i) => issue(i.type, ['body', ...i.loc], i.msg, i.input, i.ctx)) : [issue('value_error', ['body'], `Value error, ${err.message}`, null)];
      res.status(422).json({ detail: issues });
      return;
    }
    const e = err as { type?: unknown; status?: unknown; body?: unknown };
    if (e.type === 'entity.parse.failed') {
      res.status(422).json({ detail: [issue('json_invalid', ['body', 0], 'JSON decode error', typeof e.body === 'string' ? e.body.slice(0, 200) : null, { error: 'invalid JSON' })] });
      return;
    }
    if (e.type === 'entity.too.large') {
      res.status(413).json({ detail: 'request body too large' });
      return;
    }
    if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported') {
      res.status(415).json({ detail: 'unsupported request encoding' });
      return;
    }
    log('relay: unhandled error', err);
    res.status(500).json({ detail: 'internal server error' });
  };
}
