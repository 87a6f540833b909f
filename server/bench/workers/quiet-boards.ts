/**
 * How long after the end that marked a board quiet the mark still serves a claim, ms (injected
 * clock). A worker claims again a round trip after its outcome's answer; a claim later than this
 * (its worker back from an outage, another worker of the board long after) looks first, so what was
 * queued through another replica meanwhile is not left for the claim's poll.
 */
export const QUIET_MARK_MAX_AGE_MS = 1_000;

/**
 * Boards with no task waiting (no job queued, no health check requested on the board or one of its
 * instances), as the store said when a job's end was written through this process, and with nothing
 * queued (or requested) through this process since (decision 0980): the next claim on such a board,
 * if it comes within `QUIET_MARK_MAX_AGE_MS`, waits before it looks, since its look would find
 * nothing. What is queued through another replica after that end is found at the claim's poll, as
 * anything queued there after any look is; a board's mark serves one claim.
 */
export class QuietBoards {
  /** How many times a job was queued (or a check requested, or the board freed) on each board through this process. */
  private readonly queuedCount = new Map<string, number>();
  /** Boards found with nothing waiting: the count when the store was asked, and when it answered. */
  private readonly quiet = new Map<string, { asked: number; atMs: number }>();

  /** A job was queued on `board` through this process, or a check requested on it: its next claim looks. */
  queued(board: string): void {
    this.queuedCount.set(board, this.countOf(board) + 1);
    this.quiet.delete(board);
  }

  /** Taken before the store is asked whether `board` has tasks waiting; given back to `answered`. */
  asking(board: string): number {
    return this.countOf(board);
  }

  /**
   * The store answered for `board` at `nowMs` (`asked` from `asking`): quiet when nothing was
   * waiting and nothing was queued through here since it was asked (a job committed after the
   * store's look was queued after `asking`, so it shows in the count).
   */
  answered(board: string, asked: number, waiting: boolean, nowMs: number): void {
    if (!waiting && this.countOf(board) === asked) this.quiet.set(board, { asked, atMs: nowMs });
    else this.quiet.delete(board);
  }

  /** Whether every one of `boards` is quiet at `nowMs`; each mark serves this one claim. */
  take(boards: readonly string[], nowMs: number): boolean {
    const all =
      boards.length > 0 &&
      boards.every((b) => {
        const mark = this.quiet.get(b);
        return mark !== undefined && mark.asked === this.countOf(b) && nowMs - mark.atMs <= QUIET_MARK_MAX_AGE_MS;
      });
    for (const b of boards) this.quiet.delete(b);
    return all;
  }

  private countOf(board: string): number {
    return this.queuedCount.get(board) ?? 0;
  }
}
