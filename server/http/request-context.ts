import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from './logger.js';

/** An incoming `X-Request-Id` is kept when it is this tame (a proxy's id); otherwise a new one is made. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The request id of `res` (set by `requestContext`), for log lines about the request. */
export function requestIdOf(res: Response): string | undefined {
  const id = (res.locals as { requestId?: unknown }).requestId;
  return typeof id === 'string' ? id : undefined;
}

/** The route pattern that served `req` (`/api/v1/jobs/:job_id`), never the raw path: bounded label and log cardinality. */
export function routeOf(req: Request): string {
  const pattern = (req.route as { path?: unknown } | undefined)?.path;
  return typeof pattern === 'string' ? `${req.baseUrl}${pattern}` : 'unmatched';
}

/**
 * Gives every request an id (echoed as `X-Request-Id`, in error logs, in the debug line each
 * request ends with) and tells `onDone` its route pattern, status and duration when it ends.
 */
export function requestContext(options: {
  logger: Logger;
  nowMs: () => number;
  onDone?: (done: { method: string; route: string; status: number; durationMs: number }) => void;
}) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const incoming = req.get('x-request-id');
    const requestId = incoming !== undefined && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    (res.locals as { requestId?: string }).requestId = requestId;
    res.setHeader('X-Request-Id', requestId);
    const startedMs = options.nowMs();
    res.on('finish', () => {
      const done = { method: req.method, route: routeOf(req), status: res.statusCode, durationMs: options.nowMs() - startedMs };
      options.onDone?.(done);
      options.logger.debug?.(`${done.method} ${done.route} ${done.status}`, { requestId, ...done });
    });
    next();
  };
}
