/**
 * Host time, injected. Nothing in hilbench logic calls `Date.now()` or `setTimeout` directly:
 * it takes a `Clock`, so tests can drive time with `@sinonjs/fake-timers` (`createClock()`,
 * never installed globally) and a 90-second idle expiry takes milliseconds.
 *
 * Simulated time (nanoseconds of an emulated chip) is a different thing and is never a `Clock`:
 * backends report it as `...Nanos` values of their own.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch, host time. */
  nowMs(): number;
  /** Calls `fn` after `delayMs` host milliseconds; returns a handle for `clearTimeout`. */
  setTimeout(fn: () => void, delayMs: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** Opaque timer handle; only the clock that made it may clear it. */
export type TimerHandle = { readonly __timer: unique symbol } | object;

/** The real clock of the host. */
export const systemClock: Clock = {
  nowMs: () => Date.now(),
  setTimeout: (fn, delayMs) => {
    const t = setTimeout(fn, delayMs);
    // A pending timer must never keep the process alive on its own (e.g. a lease expiry).
    t.unref();
    return t;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * The real clock of the host, with timers that DO keep the process alive. For a foreground
 * command whose only pending work may be a wait (a scenario's `delay: 6s` against a remote
 * server, with idle HTTP connections closed): on `systemClock` Node would see nothing left to do
 * and exit mid-run.
 */
export const foregroundClock: Clock = {
  nowMs: () => Date.now(),
  setTimeout: (fn, delayMs) => setTimeout(fn, delayMs),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** The shape of `@sinonjs/fake-timers` `createClock()` that we rely on. */
export interface FakeTimersLike {
  now: number;
  setTimeout(fn: () => void, delayMs: number): unknown;
  clearTimeout(id: unknown): void;
}

/** Adapts a fake-timers clock (not installed globally) to `Clock`. */
export function clockFromFakeTimers(fake: FakeTimersLike): Clock {
  return {
    nowMs: () => fake.now,
    setTimeout: (fn, delayMs) => ({ id: fake.setTimeout(fn, delayMs) }),
    clearTimeout: (handle) => fake.clearTimeout((handle as { id: unknown }).id),
  };
}

/** Resolves after `delayMs` on `clock`; rejects with the signal's reason when aborted first. */
export function sleep(clock: Clock, delayMs: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clock.clearTimeout(handle);
      reject(signal?.reason);
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, delayMs);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Seconds, as used on the wire, from host milliseconds. ISO 8601 for humans. */
export function isoFromMs(ms: number): string {
  return new Date(ms).toISOString();
}
