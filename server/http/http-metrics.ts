import type { NextFunction, Request, Response } from 'express';
import { Counter, Histogram, type Registry } from 'prom-client';
import { routeOf } from './request-context.js';

/** What `httpMetrics` is told of each answered request. */
export interface RequestDone {
  method: string;
  route: string;
  status: number;
  durationMs: number;
}

/** HTTP requests by method, route pattern and status, and their durations, in `registry`. */
export function httpMetrics(registry: Registry): (done: RequestDone) => void {
  const requests = new Counter({
    name: 'hilbench_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern (never the raw path) and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const seconds = new Histogram({
    name: 'hilbench_http_request_duration_seconds',
    help: 'Time from the request to the end of its answer, by method and route pattern.',
    labelNames: ['method', 'route'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  return ({ method, route, status, durationMs }) => {
    requests.inc({ method, route, status: String(status) });
    seconds.observe({ method, route }, durationMs / 1000);
  };
}

/**
 * Tells `onDone` each request's route pattern, status and duration when its answer ends: the
 * metrics half of `requestContext`, for a service that gives its answers no request id (the relay,
 * whose answers x-relay defines).
 */
export function requestMetrics(options: { nowMs: () => number; onDone: (done: RequestDone) => void }) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const startedMs = options.nowMs();
    res.on('finish', () => options.onDone({ method: req.method, route: routeOf(req), status: res.statusCode, durationMs: options.nowMs() - startedMs }));
    next();
  };
}
