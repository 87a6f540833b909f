import type { Clock } from '../../core/clock.js';

/**
 * Long-poll waiters of one thing in this process's memory (a debug stream's bytes): each waits
 * until woken, until its bound (host ms, on the injected clock) runs out, or until its signal aborts.
 */
export class Wakeups {
  private readonly waiting = new Set<() => void>();

  constructor(private readonly clock: Clock) {}

  /** Resolves when woken, after `waitMs`, or when `signal` aborts, whichever comes first. */
  wait(waitMs: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.clock.clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.waiting.delete(done);
        resolve();
      };
      const timer = this.clock.setTimeout(done, waitMs);
      signal.addEventListener('abort', done, { once: true });
      this.waiting.add(done);
      if (signal.aborted) done();
    });
  }

  wakeAll(): void {
    for (const wake of [...this.waiting]) wake();
  }
}
