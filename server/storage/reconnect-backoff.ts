import type { Clock } from '../../core/clock.js';
import { DatabaseUnavailableError } from './storage-faults.js';

/**
 * When to try the database again after it failed to answer: the first failure lets the next
 * request try at once after `firstMs`, each further one doubles the pause up to `maxMs`, and one
 * answer resets it. Between tries requests fail at once (`check`), with the time left as their
 * `Retry-After`, instead of each waiting on a connection that is not there. Host time from the
 * injected clock.
 */
export class ReconnectBackoff {
  private pauseMs = 0;
  private nextTryAtMs = 0;

  constructor(
    private readonly clock: Clock,
    private readonly options: { firstMs: number; maxMs: number; what: string },
  ) {}

  /** Whether the database failed to answer since it last did. */
  get away(): boolean {
    return this.pauseMs > 0;
  }

  /** Throws `DatabaseUnavailableError` while waiting before the next try; otherwise lets the caller try. */
  check(): void {
    const leftMs = this.nextTryAtMs - this.clock.nowMs();
    if (this.pauseMs > 0 && leftMs > 0) {
      throw new DatabaseUnavailableError(`${this.options.what} is not answering; trying again in ${leftMs} ms`, retryAfterSeconds(leftMs));
    }
  }

  /** The database failed to answer `cause`: the error to throw, with when to try again. */
  failed(cause: unknown): DatabaseUnavailableError {
    const nowMs = this.clock.nowMs();
    // Requests that were already on their way when the database went count as one try.
    if (this.pauseMs === 0 || nowMs >= this.nextTryAtMs) {
      this.pauseMs = nextPauseMs(this.pauseMs, this.options);
      this.nextTryAtMs = nowMs + this.pauseMs;
    }
    const reason = cause instanceof Error ? cause.message : String(cause);
    return new DatabaseUnavailableError(`${this.options.what} is not answering (${reason})`, retryAfterSeconds(this.nextTryAtMs - nowMs), { cause });
  }

  /** The database answered. */
  succeeded(): void {
    this.pauseMs = 0;
    this.nextTryAtMs = 0;
  }
}

/**
 * The pause after `pauseMs` (0: none yet) in a series that starts at `firstMs` and doubles up to
 * `maxMs`: the one doubling of every try-again-later of the storage (this backoff, and the worker
 * in a server's process outlasting storage faults, `outlastStorageFaults`).
 */
export function nextPauseMs(pauseMs: number, bounds: { firstMs: number; maxMs: number }): number {
  return pauseMs === 0 ? bounds.firstMs : Math.min(pauseMs * 2, bounds.maxMs);
}

/** Whole seconds for `Retry-After`, at least 1. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
