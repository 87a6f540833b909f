import { Counter, Histogram, type Registry } from 'prom-client';

/** HTTP requests by method, route pattern and status, and their durations, in `registry`. */
export function httpMetrics(registry: Registry): (done: { method: string; route: string; status: number; durationMs: number }) => void {
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
