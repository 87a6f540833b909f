import { type Clock, sleep } from './clock.js';

/** A bounded wait ran out. The message says what was awaited, for how long, and what was seen. */
export class WaitTimeoutError extends Error {
  override readonly name = 'WaitTimeoutError';
  constructor(
    readonly waitedFor: string,
    readonly timeoutMs: number,
    readonly lastSeen: string,
  ) {
    super(
      `timed out after ${timeoutMs} ms waiting for ${waitedFor}` +
        (lastSeen ? `; last seen: ${JSON.stringify(lastSeen.slice(-400))}` : '; nothing seen'),
    );
  }
}

/**
 * Polls `check` every `pollMs` on `clock` until it returns a value other than `undefined`, or
 * `timeoutMs` passes. `describe` names what is awaited and `lastSeen` what was last observed,
 * both for the failure message. The one polling loop: clients and scenario steps poll through it.
 */
export async function waitUntil<T>(
  clock: Clock,
  check: () => T | undefined | Promise<T | undefined>,
  options: {
    timeoutMs: number;
    pollMs?: number;
    describe: string;
    lastSeen?: () => string;
    signal?: AbortSignal;
    /** How `ms` pass between two checks (e.g. ticking a fake clock); default: sleeping on `clock`. */
    pause?: (ms: number) => Promise<void>;
  },
): Promise<T> {
  const deadlineMs = clock.nowMs() + options.timeoutMs;
  const pollMs = options.pollMs ?? 10;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (clock.nowMs() >= deadlineMs) {
      throw new WaitTimeoutError(options.describe, options.timeoutMs, options.lastSeen?.() ?? '');
    }
    const pauseMs = Math.min(pollMs, Math.max(0, deadlineMs - clock.nowMs()));
    await (options.pause ? options.pause(pauseMs) : sleep(clock, pauseMs, options.signal));
  }
}
