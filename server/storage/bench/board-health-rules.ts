import { type BoardHealthRecord, healthyBoardRecord } from './board-health-store.js';
import type { Dialect } from './sql/dialect.js';
import { one, run, type Steps } from '../sql-steps.js';

/**
 * Board health's statements, once for both databases (decision 0545): read as a record, written
 * whole, and changed holding the row (decision 0551), either in a transaction of its own
 * (`BoardHealthStore.update`) or as a step of the one that ends a job (decision 0930).
 */

interface BoardHealthRow {
  consecutive_failures: number;
  last_failure: string | null;
  quarantined_since_ms: number | null;
  quarantine_reason: string | null;
}

const SELECT_HEALTH = 'SELECT consecutive_failures, last_failure, quarantined_since_ms, quarantine_reason FROM board_health';

/** The board's health; a board never seen is healthy. */
export function* healthOf(boardId: string): Steps<BoardHealthRecord> {
  return recordOf(yield* one<BoardHealthRow>(`${SELECT_HEALTH} WHERE board = ?`, [boardId]));
}

/**
 * Changes the board's health holding its row, inside the caller's transaction: `change` gets the
 * record as it is now and returns the new one, or undefined to leave it (a board never seen then
 * gets no row). Read and write are one step, so two replicas counting failures of one board lose
 * no count, and a release is never undone by a change computed from the record before it.
 */
export function* changeHealth(
  d: Dialect,
  boardId: string,
  change: (health: BoardHealthRecord) => BoardHealthRecord | undefined,
): Steps<{ before: BoardHealthRecord; after: BoardHealthRecord }> {
  const locked = () => one<BoardHealthRow>(`${SELECT_HEALTH} WHERE board = ?${d.forUpdate}`, [boardId]);
  let row = yield* locked();
  if (!row) {
    if (change({ ...healthyBoardRecord }) === undefined) return { before: { ...healthyBoardRecord }, after: { ...healthyBoardRecord } };
    // A board never seen has no row to lock: insert a healthy one (or wait for the replica that
    // is inserting it) and lock that, so two first failures are still counted one after the other.
    yield* run('INSERT INTO board_health (board, consecutive_failures) VALUES (?, 0) ON CONFLICT (board) DO NOTHING', [boardId]);
    row = yield* locked();
  }
  const before = recordOf(row);
  const after = change(before);
  if (after === undefined) return { before, after: before };
  yield* putHealth(boardId, after);
  return { before, after };
}

/** Replaces the board's health; a count that is not one is refused (RangeError) before anything is written. */
export function* putHealth(boardId: string, health: BoardHealthRecord): Steps<void> {
  if (!Number.isInteger(health.consecutiveFailures) || health.consecutiveFailures < 0) {
    throw new RangeError(`board ${boardId}: consecutiveFailures must be a non-negative integer, got ${health.consecutiveFailures}`);
  }
  yield* run(
    `INSERT INTO board_health (board, consecutive_failures, last_failure, quarantined_since_ms, quarantine_reason) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (board) DO UPDATE SET consecutive_failures = excluded.consecutive_failures, last_failure = excluded.last_failure,
       quarantined_since_ms = excluded.quarantined_since_ms, quarantine_reason = excluded.quarantine_reason`,
    [boardId, health.consecutiveFailures, health.lastFailure ?? null, health.quarantine?.sinceMs ?? null, health.quarantine?.reason ?? null],
  );
}

function recordOf(row: BoardHealthRow | undefined): BoardHealthRecord {
  if (!row) return { ...healthyBoardRecord };
  return {
    consecutiveFailures: row.consecutive_failures,
    lastFailure: row.last_failure ?? undefined,
    quarantine: row.quarantined_since_ms !== null && row.quarantine_reason !== null ? { sinceMs: row.quarantined_since_ms, reason: row.quarantine_reason } : undefined,
  };
}
