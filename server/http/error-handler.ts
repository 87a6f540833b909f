import { STATUS_CODES } from 'node:http';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { HttpError } from './http-error.js';
import type { Logger } from './logger.js';

/**
 * The one error handler. `HttpError`s are written as `{"detail": ...}` with their status and
 * headers; errors of express, its router or a body parser carrying a 4xx `status`/`statusCode`
 * answer that status (`clientErrorOf`) and are not logged; anything else is a bug: logged with its cause, answered with FastAPI's generic 500,
 * and its stack never leaves the server.
 */
export function createErrorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, next) => {
    if (res.headersSent) {
      // Too late for a clean answer: log, and let express end the connection.
      logger.error(`${req.method} ${req.originalUrl} failed after the response started`, err);
      next(err);
      return;
    }
    if (!req.complete) {
      // Answered before the body was read (e.g. 401 on an upload): drop the rest instead of
      // buffering it, and do not reuse a connection whose request framing was not consumed.
      res.setHeader('Connection', 'close');
      req.resume();
    }
    if (err instanceof HttpError) {
      for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
      res.status(err.status).json({ detail: err.detail });
      return;
    }
    const clientError = clientErrorOf(err);
    if (clientError) {
      // The client's mistake, reported by express, the router or a body parser: its status, not a bug.
      res.status(clientError.status).json({ detail: clientError.detail });
      return;
    }
    logger.error(`${req.method} ${req.originalUrl} failed with an unexpected error`, err);
    res.status(500).json({ detail: 'Internal Server Error' });
  };
}

/** Unknown paths, in FastAPI's words. */
export const notFoundHandler: RequestHandler = (_req, _res, next) => {
  next(new HttpError(404, 'Not Found'));
};

/** Known path, wrong method: 405 with the methods it does accept. */
export function methodNotAllowed(allowed: readonly string[]): RequestHandler {
  const allow = [...new Set(allowed.flatMap((m) => (m.toUpperCase() === 'GET' ? ['GET', 'HEAD'] : [m.toUpperCase()])))].join(', ');
  return (_req, _res, next) => next(new HttpError(405, 'Method Not Allowed', { Allow: allow }));
}

/**
 * A 4xx error raised by express, its router or a body parser (`status`/`statusCode`, as the
 * `http-errors` package sets them), as the answer it deserves; undefined for anything else.
 * A path segment that is not valid percent-encoding (`/api/v1/jobs/%ZZ`, the router's URIError)
 * names nothing that can exist: 404 `Not Found`, as Starlette answers a path matching no route.
 * Other messages are passed on only when the error says they are safe to show (`expose`).
 */
export function clientErrorOf(err: unknown): { status: number; detail: string } | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { status?: unknown; statusCode?: unknown; expose?: unknown; message?: unknown };
  const status = typeof e.status === 'number' ? e.status : e.statusCode;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 400 || status > 499) return undefined;
  if (err instanceof URIError) return { status: 404, detail: 'Not Found' };
  const generic = STATUS_CODES[status] ?? 'Bad Request';
  const detail = e.expose === true && typeof e.message === 'string' && e.message !== '' ? e.message : generic;
  return { status, detail };
}
