import { BackendError } from '../../../backends/backend.js';
import type { Clock, TimerHandle } from '../../../core/clock.js';
import { BenchError } from './bench-errors.js';
import type { BoardHealthControl, HealthCheckOutcome } from '../../../backends/backend.js';

/**
 * Runs `healthCheck` with a deadline on the injected clock (its signal is aborted then).
 * `BackendError('unavailable')` (no health check configured, board not attached, already open)
 * is the bench error `health_check_backend_unavailable` (the administrator's 409); any other
 * backend failure is a failed check. `stillRunning` is set when the deadline won and the backend
 * call has not returned yet.
 */
export async function runHealthCheck(options: {
  /** The board and the name of the backend checking it (for the messages). */
  boardId: string;
  backendName: string;
  healthCheck: NonNullable<BoardHealthControl['healthCheck']>;
  clock: Clock;
  /** Host ms the check may run before its signal is aborted. */
  timeoutMs: number;
}): Promise<{ outcome: HealthCheckOutcome; stillRunning: Promise<unknown> | undefined }> {
  const { boardId, backendName, healthCheck, clock, timeoutMs } = options;
  const controller = new AbortController();
  let timer: TimerHandle | undefined;
  const deadline = new Promise<'deadline'>((resolve) => {
    timer = clock.setTimeout(() => {
      controller.abort(new Error(`health check deadline (${timeoutMs} ms)`));
      resolve('deadline');
    }, timeoutMs);
  });
  const running = Promise.resolve().then(() => healthCheck(boardId, { signal: controller.signal }));
  try {
    const winner = await Promise.race([running, deadline]);
    if (winner === 'deadline') {
      return {
        outcome: { passed: false, reason: `health check on ${boardId} did not finish within ${timeoutMs / 1000} s (the ${backendName} backend was aborted)`, uartText: '' },
        stillRunning: running.catch(() => undefined),
      };
    }
    return { outcome: winner, stillRunning: undefined };
  } catch (err) {
    if (err instanceof BackendError && err.kind === 'unavailable') throw new BenchError('health_check_backend_unavailable', `cannot health-check board ${boardId}: ${err.message}`);
    if (err instanceof BackendError) return { outcome: { passed: false, reason: `health check on ${boardId} failed: ${err.message}`, uartText: '' }, stillRunning: undefined };
    throw err;
  } finally {
    if (timer !== undefined) clock.clearTimeout(timer);
  }
}
