import type { Clock } from '../core/clock.js';
import { BackendError, NANOS_PER_MS, type RunStop } from './backend.js';

/** Settles the run in progress: a stop resolves it, an error rejects it. Later calls do nothing. */
export type EndRun = (result: RunStop | BackendError) => void;

export interface WallRunOptions {
  clock: Clock;
  /** Where the run ends at the latest: nanoseconds of host time since reset release. */
  durationNanos: number;
  /** Host time since reset release, nanoseconds (the device's UART timestamps use the same). */
  elapsedNanos: () => number;
  signal?: AbortSignal;
  /** `RunOptions.until`, asked after every change. */
  until?: () => boolean;
  /** What the device sees after a change that ends the run (a crash in the log, a dead emulator), if anything. */
  check?: () => RunStop | BackendError | undefined;
  /**
   * Registers `onChange` (call it when UART bytes arrive or the device's state changes) for the
   * run; `end` settles the run from elsewhere (an exit seen asynchronously). Returns what
   * unregisters `onChange`.
   */
  watch: (onChange: () => void, end: EndRun) => () => void;
  /** Gets `end` while the run is in progress and undefined once it is over, so reset and close can end it. */
  onActive: (end: EndRun | undefined) => void;
}

/**
 * One `run` on a wall-time device (QEMU, Renode): it stops `elapsed` when `durationNanos` of host
 * time since release have passed, is cancelled when `signal` aborts, stops `until` when `until`
 * holds after a change, or ends with whatever `check` or `end` says. It looks once at the start,
 * and settles exactly once, removing its timer, abort listener and watcher on every path.
 */
export function waitForWallRun(options: WallRunOptions): Promise<RunStop> {
  const { clock, durationNanos, elapsedNanos, signal, until, check } = options;
  return new Promise<RunStop>((resolve, reject) => {
    let settled = false;
    // Replaced by what `watch` returns; a no-op until then, should `watch` end the run at once.
    let unwatch = (): void => undefined;
    const end: EndRun = (result) => {
      if (settled) return;
      settled = true;
      clock.clearTimeout(timer);
      unwatch();
      signal?.removeEventListener('abort', onAbort);
      options.onActive(undefined);
      if (result instanceof BackendError) reject(result);
      else resolve(result);
    };
    const onAbort = () => end(new BackendError('cancelled', 'run cancelled', { cause: signal?.reason }));
    const onChange = () => {
      if (signal?.aborted) return onAbort();
      const stop = check?.();
      if (stop) return end(stop);
      if (until?.()) end({ reason: 'until', elapsedNanos: elapsedNanos() });
    };
    const remainingMs = Math.max(0, (durationNanos - elapsedNanos()) / NANOS_PER_MS);
    const timer = clock.setTimeout(() => end({ reason: 'elapsed', elapsedNanos: Math.max(durationNanos, elapsedNanos()) }), remainingMs);
    unwatch = options.watch(onChange, end);
    if (settled) {
      unwatch();
      return;
    }
    options.onActive(end);
    signal?.addEventListener('abort', onAbort, { once: true });
    onChange();
  });
}
