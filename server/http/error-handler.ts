import type { ErrorRequestHandler, RequestHandler } from 'express';
import { HttpError } from './http-error.js';
import type { Logger } from './logger.js';

/**
 * The one error handler. `HttpError`s are written as `{"detail": ...}` with their status and
 * headers; anything else is a bug: logged with its cause, answered with FastAPI's generic 500,
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
