/**
 * Board health on a real bench: consecutive infrastructure failures per board, and whether the
 * board is quarantined. Kept behind a small interface so the server can persist it (a row per
 * board) and survive restarts; `InMemoryQuarantineStore` is the default.
 */
export interface BoardHealth {
  /** Infrastructure failures (`BackendError.isInfrastructure`) since the last success or release. */
  consecutiveFailures: number;
  /** Message of the most recent infrastructure failure, if any. */
  lastFailure: string | undefined;
  /** Set while quarantined: when (host ms) and why, in the words `availability()` reports. */
  quarantine: { sinceMs: number; reason: string } | undefined;
}

export interface QuarantineStore {
  /** The board's health; a board never seen is healthy. */
  get(boardId: string): Promise<BoardHealth>;
  put(boardId: string, health: BoardHealth): Promise<void>;
}

export const healthyBoard: BoardHealth = Object.freeze({ consecutiveFailures: 0, lastFailure: undefined, quarantine: undefined });

export class InMemoryQuarantineStore implements QuarantineStore {
  private readonly boards = new Map<string, BoardHealth>();

  async get(boardId: string): Promise<BoardHealth> {
    return this.boards.get(boardId) ?? healthyBoard;
  }

  async put(boardId: string, health: BoardHealth): Promise<void> {
    this.boards.set(boardId, { ...health });
  }
}

/** The reason text a quarantined board reports; the server shows it as is. */
export function quarantineReason(failures: number, lastFailure: string): string {
  return `quarantined after ${failures} consecutive infrastructure failures: ${lastFailure}`;
}

/** Health after one more infrastructure failure; quarantines at `threshold` consecutive failures. */
export function afterFailure(health: BoardHealth, message: string, threshold: number, nowMs: number): BoardHealth {
  const consecutiveFailures = health.consecutiveFailures + 1;
  // The first line is enough for a status page; the full message stays in the failed job.
  const lastFailure = message.split('\n')[0]!;
  const quarantine =
    health.quarantine ?? (consecutiveFailures >= threshold ? { sinceMs: nowMs, reason: quarantineReason(consecutiveFailures, lastFailure) } : undefined);
  return { consecutiveFailures, lastFailure, quarantine };
}

/** Health after a run that worked, or an administrator's release: the count starts again. */
export function afterSuccess(): BoardHealth {
  return { ...healthyBoard };
}
