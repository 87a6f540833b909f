import { STATUS_CODES } from 'node:http';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { boundedInput } from './bounded-input.js';
import { HttpError } from './http-error.js';
import type { Logger } from './logger.js';
import { requestIdOf } from './request-context.js';
import { storageFaultAnswer } from './storage-fault-answer.js';

/**
 * The one error handler. `HttpError`s are written as `{"detail": ...}` with their status and
 * headers; errors of express, its router or a body parser carrying a 4xx `status`/`statusCode`
 * answer that status (`clientErrorOf`) and are not logged; a storage fault (the database away, the
 * disk full) is answered 503 or 507 with `Retry-After`, naming `options.service`, and logged as a
 * warning; anything else is a bug: logged with its cause, answered with FastAPI's generic 500,
 * and its stack never leaves the server.
 */
export function createErrorHandler(logger: Logger, options: { service?: string } = {}): ErrorRequestHandler {
  const service = options.service ?? 'service';
  return (caught: unknown, req, res, _next) => {
    const fault = storageFaultAnswer(caught, service);
    if (fault) logger.warn(`${req.method} ${req.originalUrl}: ${fault.status}: ${(caught as Error).message}`, { requestId: requestIdOf(res) });
    const err = fault ?? caught;
    if (res.headersSent) {
      // Too late for a clean answer: log, and cut the connection so the client sees an incomplete
      // answer rather than a complete-looking one. Not `next(err)`: express's final handler would
      // print the stack again, and nothing may reach it (it writes HTML).
      logger.error(`${req.method} ${req.originalUrl} failed after the response started`, err, { requestId: requestIdOf(res) });
      if (!res.writableEnded) res.destroy();
      return;
    }
    if (req.complete) {
      answerError(logger, err, req, res);
      return;
    }
    // Answered before the body was read (e.g. 401 on an upload). Answering and closing at once
    // makes a client still writing its body fail with EPIPE / "fetch failed" instead of reading
    // the answer; so a small body is read and discarded first and the connection kept. A large or
    // endless one (over DRAIN_LIMIT_BYTES, or refused with 413), or one the client holds back for
    // `100 Continue`, is answered at once with the connection closed. A client that stalls is cut by the server's
    // requestTimeout.
    const declared = Number(req.headers['content-length'] ?? Number.NaN);
    const waitsForContinue = /100-continue/i.test(String(req.headers.expect ?? ''));
    // A body refused for its size (413) is by definition more than we will read: answer at once.
    const tooLarge = err instanceof HttpError && err.status === 413;
    if (tooLarge || waitsForContinue || declared > DRAIN_LIMIT_BYTES || req.readableEnded || req.destroyed) {
      closeAndAnswer(logger, err, req, res);
      return;
    }
    let seenBytes = 0;
    let done = false;
    const finish = (close: boolean) => {
      if (done) return;
      done = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onEnd);
      req.off('close', onClose);
      if (close) closeAndAnswer(logger, err, req, res);
      else answerError(logger, err, req, res);
    };
    const onData = (chunk: Buffer) => {
      seenBytes += chunk.length;
      if (seenBytes > DRAIN_LIMIT_BYTES) finish(true);
    };
    const onEnd = () => finish(false);
    const onClose = () => finish(true);
    req.on('data', onData);
    req.once('close', onClose);
    req.once('end', onEnd);
    req.once('error', onEnd);
    req.resume();
  };
}

/**
 * How much of an unread request body the error handler reads and discards so the client gets a
 * clean answer on a reusable connection: enough for any form and a typical firmware image.
 */
export const DRAIN_LIMIT_BYTES = 1024 * 1024;

/** Answers, marks the connection to close (its request framing was not consumed) and drops the rest of the body. */
function closeAndAnswer(logger: Logger, err: unknown, req: Parameters<ErrorRequestHandler>[1], res: Parameters<ErrorRequestHandler>[2]): void {
  if (res.headersSent) return;
  res.setHeader('Connection', 'close');
  req.resume();
  answerError(logger, err, req, res);
}

/**
 * Writes `err` as the answer it deserves (see createErrorHandler). Never throws: an error escaping
 * an error handler reaches express's final handler, which answers HTML with the stack.
 */
function answerError(logger: Logger, err: unknown, req: Parameters<ErrorRequestHandler>[1], res: Parameters<ErrorRequestHandler>[2]): void {
  try {
    writeError(logger, err, req, res);
  } catch (cause) {
    logger.error(`${req.method} ${req.originalUrl}: writing the error answer failed`, cause, { requestId: requestIdOf(res) });
    if (res.headersSent) {
      if (!res.writableEnded) res.destroy();
      return;
    }
    res.status(500).type('application/json').send('{"detail":"Internal Server Error"}');
  }
}

/** A validation error list as written: each echoed `input` (and `ctx`) bounded (`bounded-input.ts`). */
export function boundedDetail(detail: HttpError['detail']): HttpError['detail'] {
  if (typeof detail === 'string') return detail;
  return detail.map((item) => ({ ...item, input: boundedInput(item.input), ...(item.ctx !== undefined ? { ctx: boundedInput(item.ctx) as Record<string, unknown> } : {}) }));
}

function writeError(logger: Logger, err: unknown, req: Parameters<ErrorRequestHandler>[1], res: Parameters<ErrorRequestHandler>[2]): void {
  if (res.headersSent) return;
  {
    if (err instanceof HttpError) {
      for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
      res.status(err.status).json({ detail: boundedDetail(err.detail) });
      return;
    }
    const clientError = clientErrorOf(err);
    if (clientError) {
      // The client's mistake, reported by express, the router or a body parser: its status, not a bug.
      res.status(clientError.status).json({ detail: clientError.detail });
      return;
    }
    logger.error(`${req.method} ${req.originalUrl} failed with an unexpected error`, err, { requestId: requestIdOf(res) });
    res.status(500).json({ detail: 'Internal Server Error' });
  }
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
