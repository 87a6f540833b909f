import type { ErrorRequestHandler } from 'express';
import { RelayError as CoreRelayError } from '../../../core/relay/problem.js';
import { createErrorHandler } from '../../http/error-handler.js';
import { HttpError } from '../../http/http-error.js';
import { NOT_UTF8_DETAIL } from '../../http/json-body.js';
import { jsonDecodeError } from '../../http/json-decode-error.js';
import { NOT_UTF8_ERROR_TYPE } from '../../http/plain-json-body.js';
import { relayToHttpError } from './relay-error-http.js';
import { coreProblemsToValidation, type ValidationErrorItem } from '../../../wire/problem-detail.js';
import type { Logger } from '../../http/logger.js';
import { RelayRefusal } from '../domain/relay-errors.js';

/**
 * The relay uses the HTTP layer's one error type (`server/http/http-error.ts`): `HttpError(status,
 * detail, headers)` written as `{"detail": ...}` by the one handler. Use cases and domain refuse with
 * `RelayRefusal`s (the catalog's statuses in relay-error-http.ts; 422 entries from the wire's one
 * translator); this module adds the relay's error handler, which also words what express refuses.
 */
export type ValidationIssue = ValidationErrorItem;

/** Builds an issue with the keys in wire order and `ctx` only when there is one. */
export function issue(type: string, loc: (string | number)[], msg: string, input: unknown, ctx?: Record<string, unknown>): ValidationIssue {
  const out: ValidationIssue = { type, loc, msg, input: input === undefined ? null : input };
  if (ctx !== undefined) out.ctx = ctx;
  return out;
}

/**
 * The relay's error handler: translates what only the relay meets (its domain's refusals, by the
 * catalog of relay-error-http.ts; express.json failures; a core
 * precondition that slipped past a route's checks) into `HttpError`s, then hands every error to the
 * HTTP layer's one handler, which writes them, logs unknown ones with their cause as a generic 500,
 * and closes connections answered before their body was read.
 */
export function relayErrorHandler(logger: Logger): ErrorRequestHandler {
  const common = createErrorHandler(logger, { service: 'relay' });
  return (err: unknown, req, res, next) => {
    common(translate(err), req, res, next);
  };
}

function translate(err: unknown): unknown {
  if (err instanceof RelayRefusal) return relayToHttpError(err);
  if (err instanceof CoreRelayError) {
    const items = err.problems.length > 0 ? coreProblemsToValidation(err.problems, ['body']) : [issue('value_error', ['body'], `Value error, ${err.message}`, null)];
    return new HttpError(422, items);
  }
  const e = err as { type?: unknown; body?: unknown } | null;
  switch (e?.type) {
    case 'entity.parse.failed':
      // The parser's SyntaxError with the text it read as `body` (body-parser's, or plainJsonBody's).
      return jsonDecodeError(typeof e.body === 'string' ? e.body : '', err);
    case NOT_UTF8_ERROR_TYPE:
      // FastAPI's 400, not the 422 of JSON that does not parse (NOT_UTF8_DETAIL says why).
      return new HttpError(400, NOT_UTF8_DETAIL);
    case 'entity.too.large':
      return new HttpError(413, 'request body too large');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new HttpError(415, 'unsupported request encoding');
    default:
      return err;
  }
}
