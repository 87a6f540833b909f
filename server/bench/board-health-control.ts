import type { Backend } from '../../backends/backend.js';
import type { BoardHealth } from '../../backends/probe/quarantine-store.js';

/** Outcome of a health-check firmware run (the shape `ProbeBackend.healthCheck` returns). */
export type HealthCheckOutcome =
  | { passed: true; uartText: string; elapsedNanos: number }
  | { passed: false; reason: string; uartText: string };

/**
 * What a backend that keeps board health (today: the probe backend, which quarantines a board
 * after consecutive infrastructure failures) offers an administrator. Optional and detected at
 * run time with `boardHealthControlOf`, so the server never imports a backend's class and any
 * backend can opt in by having these methods.
 */
export interface BoardHealthControl {
  /** Consecutive infrastructure failures, the last one, and the quarantine if any. */
  health(boardId: string): Promise<BoardHealth>;
  /** Puts the board back in service: clears the quarantine and the failure count. */
  release(boardId: string): Promise<void>;
  /**
   * Runs the board's health-check firmware; passing releases the board. Throws
   * `BackendError('unavailable', ...)` when the board has no health check configured.
   */
  healthCheck?(boardId: string, options?: { signal?: AbortSignal }): Promise<HealthCheckOutcome>;
}

/** `backend` as a `BoardHealthControl` when it has `health` and `release` methods; undefined otherwise. */
export function boardHealthControlOf(backend: Backend): (Backend & BoardHealthControl) | undefined {
  const candidate = backend as Backend & Partial<Record<keyof BoardHealthControl, unknown>>;
  if (typeof candidate.health !== 'function' || typeof candidate.release !== 'function') return undefined;
  if (candidate.healthCheck !== undefined && typeof candidate.healthCheck !== 'function') return undefined;
  return candidate as Backend & BoardHealthControl;
}
