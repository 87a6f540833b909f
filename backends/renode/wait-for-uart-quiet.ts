import type { Clock, TimerHandle } from '../../core/clock.js';

/**
 * How long the UART socket must stay quiet after a `CPU abort` line before the crashed run ends,
 * host ms. Renode logs the abort on its console from the emulation thread and writes the UART
 * through the socket terminal; nothing orders the two, so the firmware's last bytes can reach us
 * after the log line. Once the core has halted, those bytes come in one burst within
 * milliseconds (the stand-in test delays them 50 ms on purpose); 200 ms of silence leaves room
 * for a loaded host without making every crashed run noticeably longer.
 */
export const RENODE_DRAIN_QUIET_MS = 200;

/**
 * Upper bound on that drain, host ms, however the bytes keep trickling in: a halted core sends
 * nothing more, so reaching it means something is still talking, and the run ends anyway.
 * Bytes arriving after the drain are counted as dropped by the device.
 */
export const RENODE_DRAIN_TIMEOUT_MS = 2000;

/** Why `waitForUartQuiet` returned. */
export type UartDrainEnd = 'quiet' | 'timeout' | 'closed' | 'aborted';

export interface UartQuietOptions {
  clock: Clock;
  /** Silence that ends the wait, host ms; restarted by every `onActivity` call. */
  quietMs: number;
  /** Bound on the whole wait, host ms. */
  timeoutMs: number;
  /** Registers `listener`, to be called whenever UART bytes arrive; returns what unregisters it. */
  onActivity: (listener: () => void) => () => void;
  /** Settles when no further bytes can come (the socket closed). */
  closed: Promise<void>;
  /** Ends the wait early (reset, close, a cancelled run). */
  signal?: AbortSignal;
}

/**
 * Waits until the UART has been quiet for `quietMs`, at most `timeoutMs` in all, or until the
 * socket closes or `signal` aborts; says which. Removes its timers and listeners on every path.
 */
export function waitForUartQuiet(options: UartQuietOptions): Promise<UartDrainEnd> {
  const { clock, quietMs, timeoutMs, signal } = options;
  return new Promise<UartDrainEnd>((resolve) => {
    if (signal?.aborted) {
      resolve('aborted');
      return;
    }
    let settled = false;
    let quietTimer: TimerHandle;
    const finish = (how: UartDrainEnd) => {
      if (settled) return;
      settled = true;
      clock.clearTimeout(quietTimer);
      clock.clearTimeout(limitTimer);
      unwatch();
      signal?.removeEventListener('abort', onAbort);
      resolve(how);
    };
    const onAbort = () => finish('aborted');
    const restartQuiet = () => {
      clock.clearTimeout(quietTimer);
      quietTimer = clock.setTimeout(() => finish('quiet'), quietMs);
    };
    quietTimer = clock.setTimeout(() => finish('quiet'), quietMs);
    const limitTimer = clock.setTimeout(() => finish('timeout'), timeoutMs);
    const unwatch = options.onActivity(() => {
      if (!settled) restartQuiet();
    });
    signal?.addEventListener('abort', onAbort, { once: true });
    void options.closed.then(() => finish('closed'));
  });
}
