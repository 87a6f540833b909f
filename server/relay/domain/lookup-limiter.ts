import { BoundedCache } from './bounded-cache.js';

/**
 * `lookupsPerHour` for GET /lookup: each caller's lookup times within the last hour, in memory.
 * It used to be a table, so every lookup wrote to the database; a read must not change stored state
 * (issue 18), and a limit that restarts with the process is enough for a per-caller allowance
 * whose window is one hour. Bounded: the least recently seen callers are forgotten first.
 */
export class LookupLimiter {
  private readonly recent: BoundedCache<string, number[]>;

  constructor(
    private readonly perHour: number,
    maxCallers = 10_000,
  ) {
    this.recent = new BoundedCache(maxCallers);
  }

  /** Counts one lookup by `caller` at `nowMs`; over the limit, counts nothing and returns the seconds to wait. */
  take(caller: string, nowMs: number): { ok: true } | { ok: false; retryAfterSeconds: number } {
    const hourMs = 3600_000;
    const times = (this.recent.get(caller) ?? []).filter((at) => at > nowMs - hourMs);
    if (times.length >= this.perHour) {
      this.recent.set(caller, times);
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(((times[0] as number) + hourMs - nowMs) / 1000)) };
    }
    times.push(nowMs);
    this.recent.set(caller, times);
    return { ok: true };
  }
}
