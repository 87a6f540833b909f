import type { Clock, TimerHandle } from '../../core/clock.js';

/** What one automatic health check reports (the shape `ProbeBackend.healthCheck` returns, reduced). */
export interface AutomaticCheckOutcome {
  passed: boolean;
  reason?: string;
}

/** Told after every automatic check: which attempt it was and whether another one is scheduled. */
export type AutomaticCheckListener = (event: { boardId: string; attempt: number; outcome: AutomaticCheckOutcome; nextInMs: number | undefined }) => void;

export interface AutomaticHealthChecksOptions {
  clock: Clock;
  /** Runs the board's health check; passing releases it. A rejection counts as a failed check. */
  check: (boardId: string) => Promise<AutomaticCheckOutcome>;
  /** Whether the board is still quarantined (an administrator may have released it meanwhile). */
  isQuarantined: (boardId: string) => Promise<boolean>;
  /** Per board: host ms to wait before each check, and how many checks at most; undefined: none. */
  policy: (boardId: string) => { retryAfterMs: number; maxChecks: number } | undefined;
  onCheck?: AutomaticCheckListener;
}

/**
 * Issue 4: "an optional health-check firmware run can [put a quarantined board back]
 * automatically". After a board is quarantined its check runs `retryAfterMs` later on the
 * injected clock, and again that long after each failed check, at most `maxChecks` times; a
 * passing check (which releases the board) or an administrator's release ends the series. The
 * bound keeps a dead board from being flashed every few minutes for ever: after the last failed
 * check it stays quarantined until an administrator acts.
 */
export class AutomaticHealthChecks {
  private readonly timers = new Map<string, TimerHandle>();
  private readonly attempts = new Map<string, number>();
  private readonly running = new Set<string>();
  private closed = false;

  constructor(private readonly options: AutomaticHealthChecksOptions) {}

  /** The board was just quarantined (or found quarantined at start): schedules its first check. */
  quarantined(boardId: string): void {
    if (this.running.has(boardId)) return; // the running check schedules the next one itself
    this.attempts.set(boardId, 0);
    this.schedule(boardId);
  }

  /** The board is back in service (a passing check or an administrator): the series ends. */
  released(boardId: string): void {
    this.cancel(boardId);
    this.attempts.delete(boardId);
  }

  /** Whether a check is scheduled for `boardId`. */
  scheduled(boardId: string): boolean {
    return this.timers.has(boardId);
  }

  /** Stops every scheduled check (a running one finishes but schedules nothing). */
  close(): void {
    this.closed = true;
    for (const boardId of [...this.timers.keys()]) this.cancel(boardId);
  }

  private schedule(boardId: string): number | undefined {
    const policy = this.options.policy(boardId);
    if (this.closed || !policy || this.timers.has(boardId)) return undefined;
    if ((this.attempts.get(boardId) ?? 0) >= policy.maxChecks) return undefined;
    this.timers.set(
      boardId,
      this.options.clock.setTimeout(() => {
        this.timers.delete(boardId);
        void this.run(boardId);
      }, policy.retryAfterMs),
    );
    return policy.retryAfterMs;
  }

  private async run(boardId: string): Promise<void> {
    if (this.closed || !(await this.options.isQuarantined(boardId).catch(() => false))) {
      this.attempts.delete(boardId);
      return;
    }
    const attempt = (this.attempts.get(boardId) ?? 0) + 1;
    this.attempts.set(boardId, attempt);
    this.running.add(boardId);
    let outcome: AutomaticCheckOutcome;
    try {
      outcome = await this.options.check(boardId);
    } catch (err) {
      outcome = { passed: false, reason: `automatic health check on ${boardId} failed: ${err instanceof Error ? err.message : String(err)}` };
    } finally {
      this.running.delete(boardId);
    }
    let nextInMs: number | undefined;
    if (outcome.passed) this.attempts.delete(boardId);
    else if (await this.options.isQuarantined(boardId).catch(() => false)) nextInMs = this.schedule(boardId);
    this.options.onCheck?.({ boardId, attempt, outcome, nextInMs });
  }

  private cancel(boardId: string) {
    const timer = this.timers.get(boardId);
    if (timer !== undefined) this.options.clock.clearTimeout(timer);
    this.timers.delete(boardId);
  }
}
