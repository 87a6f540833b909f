/**
 * Board health as the bench service keeps it: consecutive infrastructure failures per board and
 * whether the board is quarantined, in the service's own database so a quarantine survives a
 * restart. The shapes are the server's own (a backend that keeps board health, such as the probe
 * backend, takes this store structurally), so nothing in `server/` names a backend's types.
 */
export interface BoardHealthRecord {
  /** Infrastructure failures since the last success or release. */
  consecutiveFailures: number;
  /** Message of the most recent infrastructure failure, if any. */
  lastFailure: string | undefined;
  /** Set while quarantined: when (host ms) and why. */
  quarantine: { sinceMs: number; reason: string } | undefined;
}

export interface BoardHealthStore {
  /** The board's health; a board never seen is healthy. */
  get(boardId: string): Promise<BoardHealthRecord>;
  /** Replaces the board's health; committed before it resolves. */
  put(boardId: string, health: BoardHealthRecord): Promise<void>;
}

/** The health of a board never seen, or released. */
export const healthyBoardRecord: BoardHealthRecord = Object.freeze({ consecutiveFailures: 0, lastFailure: undefined, quarantine: undefined });
