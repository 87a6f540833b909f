import type { EngineHalt, EngineUartChunk, SimEngine } from './sim-engine.js';

/** How a bounded run of an engine ended; `elapsedNanos` counts from reset release. */
export type EngineRunStop =
  | { reason: 'elapsed'; elapsedNanos: number }
  | { reason: 'until'; elapsedNanos: number }
  | { reason: 'cancelled'; elapsedNanos: number }
  | (EngineHalt & { elapsedNanos: number });

export interface RunEngineOptions {
  /** Simulated time since reset release at which the run ends. */
  endNanos: number;
  /** Simulated time executed between two yields to the host event loop. Default 1 ms. */
  sliceNanos?: number;
  signal?: AbortSignal;
  /**
   * Checked after every UART chunk and at every slice end; true stops the run. A promise (the
   * verdict lives elsewhere: an engine thread asks its host) holds the run until it settles.
   */
  until?: () => boolean | Promise<boolean>;
  onUart: (chunk: EngineUartChunk) => void;
  /** Lets the host event loop run (timers, sockets, HTTP); default `setImmediate`. */
  yieldToHost?: () => Promise<void>;
}

export const DEFAULT_SLICE_NANOS = 1_000_000;

const setImmediateYield = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Runs `engine` until `endNanos` of simulated time, a halt, `until`, or the abort signal, in
 * slices: after each slice it hands UART output out, checks `until` and the signal, and yields
 * to the event loop, so a long run never blocks the HTTP server. A core that sleeps with nothing
 * scheduled to wake it jumps to the end of the run (the time still counts as elapsed).
 */
export async function runEngine(engine: SimEngine, options: RunEngineOptions): Promise<EngineRunStop> {
  const sliceNanos = options.sliceNanos ?? DEFAULT_SLICE_NANOS;
  const yieldToHost = options.yieldToHost ?? setImmediateYield;
  const { signal, until, endNanos } = options;
  // Engines count fractional nanoseconds (62.5 ns AVR cycles, 83.3 ns at 12 MHz); callers get whole ones.
  const nowNanos = () => Math.round(engine.nanos);
  const stopWith = (reason: 'elapsed' | 'until' | 'cancelled'): EngineRunStop => ({ reason, elapsedNanos: nowNanos() });

  /** Hands out ready chunks; returns a stop if one of them ended the run. */
  const drain = async (partial: boolean): Promise<EngineRunStop | undefined> => {
    for (let chunk = engine.takeUartOutput({ partial }); chunk; chunk = engine.takeUartOutput({ partial })) {
      options.onUart({ atNanos: Math.round(chunk.atNanos), bytes: chunk.bytes });
      if (signal?.aborted) return stopWith('cancelled');
      if (await until?.()) return stopWith('until');
    }
    return undefined;
  };

  if (signal?.aborted) return stopWith('cancelled');
  for (;;) {
    const sliceEnd = engine.asleepForever ? endNanos : Math.min(engine.nanos + sliceNanos, endNanos);
    while (engine.nanos < sliceEnd) {
      const halt = engine.advance(sliceEnd);
      const stop = await drain(false);
      if (stop) return stop;
      if (halt) {
        // The exit or crash is the news; output still buffered is handed out first.
        const last = await drain(true);
        if (last && last.reason === 'cancelled') return last;
        return { ...halt, elapsedNanos: nowNanos() };
      }
    }
    const stop = await drain(true);
    if (stop) return stop;
    if (engine.nanos >= endNanos) return stopWith('elapsed');
    if (await until?.()) return stopWith('until');
    await yieldToHost();
    if (signal?.aborted) return stopWith('cancelled');
  }
}
