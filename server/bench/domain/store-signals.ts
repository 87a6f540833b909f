import { type Clock, sleep } from '../../../core/clock.js';

/**
 * Waiting for something the store will say, by topic: a waiter looks at the store, and looks again
 * when this process notifies its topic (the change happened here) or, with `pollMs`, on the
 * injected clock (the change happened on another replica of a shared database). Listening starts
 * before each look, so a change between the look and the wait still wakes it.
 */
export class StoreSignals {
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(
    private readonly clock: Clock,
    /** Host ms between two looks when nothing here said so; absent: only notifications wake a waiter. */
    private readonly pollMs: number | undefined,
  ) {}

  /** Wakes every waiter of `topic` to look at the store again. */
  notify(topic: string): void {
    for (const wake of [...(this.waiters.get(topic) ?? [])]) wake();
  }

  /**
   * `look()`'s first answer that is not undefined; undefined when `signal` aborts first. `waitFirst`:
   * the caller knows the store has nothing yet (it said so a moment ago, and nothing here changed it
   * since), so the first look waits for a notification or the poll.
   */
  async until<T>(topic: string, signal: AbortSignal, look: () => Promise<T | undefined>, options: { waitFirst?: boolean } = {}): Promise<T | undefined> {
    let waitFirst = options.waitFirst === true;
    while (!signal.aborted) {
      let wake: () => void = () => undefined;
      const woken = new Promise<void>((resolve) => (wake = resolve));
      const set = this.waiters.get(topic) ?? new Set<() => void>();
      set.add(wake);
      this.waiters.set(topic, set);
      const onAbort = () => wake();
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        const found = waitFirst ? undefined : await look();
        waitFirst = false;
        if (found !== undefined) return found;
        await Promise.race([woken, ...(this.pollMs === undefined ? [] : [sleep(this.clock, this.pollMs, signal).catch(() => undefined)])]);
      } finally {
        signal.removeEventListener('abort', onAbort);
        set.delete(wake);
        if (set.size === 0 && this.waiters.get(topic) === set) this.waiters.delete(topic);
      }
    }
    return undefined;
  }
}
