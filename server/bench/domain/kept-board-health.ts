import type { HealthCheckOutcome } from '../../../backends/backend.js';
import type { BoardHealthRecord } from '../../storage/bench/board-health-store.js';
import type { BoardStatus } from './board-state.js';

/** A board's (or an instance's) health as the backend keeping it stores it. */
export interface KeptBoardHealth {
  /** The backend keeping it (e.g. probe). */
  backend: string;
  record: BoardHealthRecord;
}

/** A board or instance right after an administrator changed its health: its status from a fresh availability check. */
export interface BoardAfterAdmin {
  /** The board, or the instance of a pool of several, as the administrator named it. */
  board: string;
  status: BoardStatus;
  offlineReason: string | null;
  health: KeptBoardHealth;
}

/** An administrator's health check as it ended, and the board after it. */
export interface BoardHealthCheck extends BoardAfterAdmin {
  outcome: HealthCheckOutcome;
}

/** The largest time a JavaScript Date holds, in ms either side of the epoch. */
const MAX_DATE_MS = 8.64e15;

/**
 * `record` if every field an answer shows can be shown; else throws, naming the field. A record the
 * keeper stored malformed (a quarantine time that is no date) must not fail the whole `GET /admin`
 * or console: the reader catches this inside its own containment and shows no health for that board.
 */
export function showableHealth(record: BoardHealthRecord): BoardHealthRecord {
  if (!Number.isInteger(record.consecutiveFailures) || record.consecutiveFailures < 0) {
    throw new RangeError(`consecutiveFailures is ${String(record.consecutiveFailures)}, not a count`);
  }
  const since = record.quarantine?.sinceMs;
  if (since !== undefined && !(Number.isFinite(since) && Math.abs(since) <= MAX_DATE_MS)) {
    throw new RangeError(`quarantine.sinceMs is ${String(since)}, not a time`);
  }
  return record;
}
