import { BenchError } from './bench-errors.js';

/**
 * Counts the long polls open in this server process, by key (a worker's claims, an agent's
 * waits and streams), refusing one more than a key's bound with `too_many_long_polls` (429,
 * `Retry-After: 1`) before it looks at the store: each one waiting looks at the store every
 * second or two, so thousands from one credential slowed every other caller's request
 * (decisions 0470, 0471). In process memory, not the store: the cost bounded is this process's
 * own (its connection pool and its polling), and a count in the store would outlive a process
 * that crashed with polls open.
 */
export class LongPollSlots {
  private readonly open = new Map<string, number>();

  /**
   * Takes one of `max` slots of `key`, or throws naming `why`. Returns the release, which frees
   * the slot once however often it is called (a stream ends, and its client goes too).
   */
  take(key: string, max: number, why: string): () => void {
    const count = this.open.get(key) ?? 0;
    if (count >= max) throw new BenchError('too_many_long_polls', `${why}: let one answer (or end it) before opening another`, { retryAfterSeconds: 1 });
    this.open.set(key, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(key) ?? 1) - 1;
      if (left === 0) this.open.delete(key);
      else this.open.set(key, left);
    };
  }

  /** Runs `poll` in a slot of `key`, freed when it settles. */
  async run<T>(key: string, max: number, why: string, poll: () => Promise<T>): Promise<T> {
    const release = this.take(key, max, why);
    try {
      return await poll();
    } finally {
      release();
    }
  }

  /** The long polls `key` holds now (tests, metrics). */
  held(key: string): number {
    return this.open.get(key) ?? 0;
  }
}
