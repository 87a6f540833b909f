/**
 * Boards with no job waiting, as the store said when a job's end was written through this process,
 * and with nothing queued through this process since (decision 0980): the next claim on such a
 * board waits before it looks, since its look would find nothing. What is queued through another
 * replica after that end is found at the claim's poll, as anything queued there after any look is;
 * a board's mark serves one claim.
 */
export class QuietBoards {
  /** How many times a job was queued (or a check requested) on each board through this process. */
  private readonly queuedCount = new Map<string, number>();
  /** Boards found with nothing queued, with the count when the store was asked. */
  private readonly quiet = new Map<string, number>();

  /** A job was queued on `board` through this process, or a check requested on it: its next claim looks. */
  queued(board: string): void {
    this.queuedCount.set(board, this.countOf(board) + 1);
    this.quiet.delete(board);
  }

  /** Taken before the store is asked whether `board` has jobs waiting; given back to `answered`. */
  asking(board: string): number {
    return this.countOf(board);
  }

  /**
   * The store answered for `board` (`asked` from `asking`): quiet when nothing was waiting and
   * nothing was queued through here since it was asked (a job committed after the store's look
   * was queued after `asking`, so it shows in the count).
   */
  answered(board: string, asked: number, waiting: boolean): void {
    if (!waiting && this.countOf(board) === asked) this.quiet.set(board, asked);
    else this.quiet.delete(board);
  }

  /** Whether every one of `boards` is quiet; each mark serves this one claim. */
  take(boards: readonly string[]): boolean {
    const all = boards.length > 0 && boards.every((b) => this.quiet.get(b) === this.countOf(b));
    for (const b of boards) this.quiet.delete(b);
    return all;
  }

  private countOf(board: string): number {
    return this.queuedCount.get(board) ?? 0;
  }
}
