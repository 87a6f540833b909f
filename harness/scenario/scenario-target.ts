import type { Board } from '../../boards/board-schema.js';
import type { Backend } from '../../backends/backend.js';
import { type Clock, foregroundClock, sleep } from '../../core/clock.js';

/**
 * What a scenario runs against: bench and relay base URLs (in process or remote), the host clock of
 * waits stated `simulated`, and a backend for device steps. Building an in-process target needs the
 * server layer, so it lives in bin/run-command.ts (`startInProcessTarget`); harness code only sees
 * this interface.
 */
export interface ScenarioTarget {
  /** For reports: e.g. `in-process, backend sim` or `bench http://10.0.0.5:8080`. */
  description: string;
  benchUrl?: string;
  relayUrl?: string;
  /**
   * Host clock of `simulated` waits: the fake clock an in-process server runs on, or the system
   * clock against a remote server (where simulated host time does not exist: such waits take real time).
   */
  clock: Clock;
  /** Lets `ms` pass on `clock`: ticks the fake clock (firing the server's timers), or sleeps. */
  advance(ms: number): Promise<void>;
  /** True when `clock` is a fake one this target drives. */
  simulatedHost: boolean;
  /** Runs device steps; its name decides a scenario's `backends` filter. */
  backend?: Backend;
  /** Board catalog for device steps. */
  boards: readonly Board[];
  fetch?: typeof fetch;
  /** Real host time of `wall` waits and of the real-time yields while polling: foregroundClock (ref'd timers), or a test's. */
  realClock: Clock;
}

/** A target for remote services in real time (`--bench-url`, `--relay-url`). */
export function remoteTarget(options: { benchUrl?: string; relayUrl?: string; backend?: Backend; boards: readonly Board[]; fetch?: typeof fetch }): ScenarioTarget {
  return {
    description: [options.benchUrl && `bench ${options.benchUrl}`, options.relayUrl && `relay ${options.relayUrl}`].filter(Boolean).join(', ') || 'no services',
    ...options,
    // Ref'd timers: a wait may be the only pending work of the run (systemClock's would let Node exit).
    clock: foregroundClock,
    realClock: foregroundClock,
    advance: (ms) => sleep(foregroundClock, ms),
    simulatedHost: false,
  };
}
