import { waitUntil, WaitTimeoutError } from '../../core/wait.js';
import type { ScenarioContext } from './scenario-context.js';
import { ScenarioError } from './scenario-error.js';
import type { ClockKind } from './step-fields.js';

/** Poll interval of polling steps that state none. */
export const DEFAULT_POLL_MS = 50;

/** Polls `probe` on the clock of `kind` until it returns a value, for at most `timeoutMs`. */
export async function pollUntil<T>(
  ctx: ScenarioContext,
  options: { kind: ClockKind; timeoutMs: number; pollMs: number; waitingFor: string; lastSeen: () => string; realTimeWork?: () => boolean },
  probe: () => Promise<T | undefined>,
): Promise<T> {
  try {
    return await waitUntil(ctx.clockFor(options.kind), probe, {
      timeoutMs: options.timeoutMs,
      pollMs: options.pollMs,
      describe: options.waitingFor,
      lastSeen: options.lastSeen,
      // At least 1 ms: a pause of nothing would poll a fake clock that never moves.
      pause: (ms) => ctx.pollPause(Math.max(1, ms), options.kind, options.realTimeWork?.() ?? false),
    });
  } catch (err) {
    if (!(err instanceof WaitTimeoutError)) throw err;
    throw new ScenarioError('timeout', `timed out after ${options.timeoutMs} ms (${options.kind} clock) waiting for ${options.waitingFor}`, [], {
      expected: options.waitingFor,
      actual: options.lastSeen(),
    });
  }
}
