import type { Clock, TimerHandle } from '../../core/clock.js';

interface Waiter {
  agentId: string;
  wake: () => void;
}

/**
 * Agents waiting for a busy board, first come first served (issue 11): only the head of a
 * board's queue tries for the lease; the others wait their turn. Woken when something in this
 * process may have freed a board (a session closed, a job ended) and every `retryMs` of the
 * injected clock (a board freed through another replica). In-process: each replica keeps its own
 * queue, so across replicas the order is per replica.
 */
export class SessionQueue {
  private readonly queues = new Map<string, Waiter[]>();

  constructor(private readonly deps: { clock: Clock; retryMs?: number }) {}

  /** Position (1-based) `agentId` would have, or has, in `board`'s queue. */
  position(board: string, waiter: Waiter): number {
    const queue = this.queues.get(board) ?? [];
    const index = queue.indexOf(waiter);
    return index < 0 ? queue.length + 1 : index + 1;
  }

  /** How many wait for `board`, and the first place (1-based) of `agentId` among them, if it waits. */
  lineOf(board: string, agentId: string): { waiting: number; position: number | null } {
    const queue = this.queues.get(board) ?? [];
    const index = queue.findIndex((w) => w.agentId === agentId);
    return { waiting: queue.length, position: index < 0 ? null : index + 1 };
  }

  /** Something may have freed a board: every head of queue tries again. */
  nudge(): void {
    for (const queue of this.queues.values()) queue[0]?.wake();
  }

  /**
   * Waits in `board`'s queue, calling `attempt` whenever this waiter is at the head and woken,
   * until it returns a value (then leaves the queue with it), `waitMs` runs out or `signal` aborts
   * (then leaves with undefined and the position it had).
   */
  async wait<T>(board: string, agentId: string, options: { waitMs: number; signal: AbortSignal; attempt: () => Promise<T | undefined> }): Promise<{ value?: T; position: number }> {
    let wake: () => void = () => undefined;
    const waiter: Waiter = { agentId, wake: () => wake() };
    const queue = this.queues.get(board) ?? [];
    queue.push(waiter);
    this.queues.set(board, queue);
    const deadlineMs = this.deps.clock.nowMs() + options.waitMs;
    let timer: TimerHandle | undefined;
    // One abort listener for the whole wait (one per retry piled up: 300 on a 300 s wait).
    const onAbort = () => wake();
    options.signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        if (queue[0] === waiter) {
          const value = await options.attempt();
          if (value !== undefined) return { value, position: 1 };
        }
        const leftMs = deadlineMs - this.deps.clock.nowMs();
        if (leftMs <= 0 || options.signal.aborted) return { position: this.position(board, waiter) };
        await new Promise<void>((resolve) => {
          wake = resolve;
          timer = this.deps.clock.setTimeout(resolve, Math.min(leftMs, this.deps.retryMs ?? 1_000));
          if (options.signal.aborted) resolve();
        });
        if (timer !== undefined) this.deps.clock.clearTimeout(timer);
      }
    } finally {
      options.signal.removeEventListener('abort', onAbort);
      if (timer !== undefined) this.deps.clock.clearTimeout(timer);
      const index = queue.indexOf(waiter);
      if (index >= 0) queue.splice(index, 1);
      if (queue.length === 0) this.queues.delete(board);
      // The next in line tries at once.
      queue[0]?.wake();
    }
  }
}
