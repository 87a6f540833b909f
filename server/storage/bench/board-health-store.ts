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
  /**
   * Changes the board's health in one transaction holding its row (decision 0551): `change` gets
   * the record as it is now and returns the new one, or undefined to leave it. Read and write are
   * one step, so two replicas counting failures of one board lose no count, and a `put` (a
   * release) is never undone by a change computed from the record before it. `change` must be a
   * pure function of its argument: the transaction may run again after a race the database detected.
   */
  update(boardId: string, change: (health: BoardHealthRecord) => BoardHealthRecord | undefined): Promise<{ before: BoardHealthRecord; after: BoardHealthRecord }>;
}

/** The health of a board never seen, or released. */
export const healthyBoardRecord: BoardHealthRecord = Object.freeze({ consecutiveFailures: 0, lastFailure: undefined, quarantine: undefined });
