import { BackendError, keepsBoardHealth } from '../../backends/backend.js';
import type { Clock, TimerHandle } from '../../core/clock.js';
import type { WorkerBoard } from './bench-worker.js';
import type { HealthCheckReport, HealthCheckTicket } from './worker-link.js';

/**
 * Runs an administrator's health check of a board on this worker (decision 0421): the backend's
 * own check under the ticket's deadline (its signal is aborted then). Never rejects: a board this
 * worker cannot check is `refused` (the administrator's 409), a backend failure is a failed check.
 * `settled` is when the backend call really returned (the board stays the check's until then).
 */
export function runWorkerHealthCheck(
  ticket: HealthCheckTicket,
  target: WorkerBoard | undefined,
  options: { clock: Clock; /** Aborts the check (the worker is stopping). */ signal: AbortSignal },
): { report: Promise<HealthCheckReport>; settled: Promise<void> } {
  const { clock } = options;
  // An instance of a pool of physical boards is checked alone (decision 0606): named as such.
  const named = ticket.instance ?? ticket.board;
  const backend = target?.healthKeeper ?? target?.backend;
  const check = backend && keepsBoardHealth(backend) ? backend.healthCheck?.bind(backend) : undefined;
  if (!backend || !check) {
    const why = backend ? `its ${backend.name} backend has no health-check run` : 'this worker does not serve it any more';
    const report: HealthCheckReport = { passed: false, refused: true, reason: `${ticket.instance === undefined ? `board ${ticket.board}` : `instance ${ticket.instance}`} cannot be health-checked on this worker: ${why}`, uartText: '' };
    return { report: Promise.resolve(report), settled: Promise.resolve() };
  }
  const controller = new AbortController();
  const stop = () => controller.abort(new Error('the worker is stopping'));
  if (options.signal.aborted) stop();
  else options.signal.addEventListener('abort', stop, { once: true });
  let timer: TimerHandle | undefined;
  const deadline = new Promise<HealthCheckReport>((resolve) => {
    timer = clock.setTimeout(() => {
      controller.abort(new Error(`health check deadline (${ticket.timeoutMs} ms)`));
      resolve({ passed: false, reason: `health check on ${named} did not finish within ${ticket.timeoutMs / 1000} s (the ${backend.name} backend was aborted)`, uartText: '' });
    }, ticket.timeoutMs);
  });
  const running = Promise.resolve()
    .then(() => check(ticket.board, { signal: controller.signal, ...(ticket.instance === undefined ? {} : { instance: ticket.instance }) }))
    .then(
      (outcome): HealthCheckReport => outcome,
      (err: unknown): HealthCheckReport => {
        if (err instanceof BackendError && err.kind === 'unavailable') return { passed: false, refused: true, reason: err.message, uartText: '' };
        const message = err instanceof Error ? err.message : String(err);
        return { passed: false, reason: `health check on ${named} failed: ${message}`, uartText: '' };
      },
    );
  const report = Promise.race([running, deadline]).finally(() => {
    if (timer !== undefined) clock.clearTimeout(timer);
    options.signal.removeEventListener('abort', stop);
  });
  return { report, settled: running.then(() => undefined) };
}
