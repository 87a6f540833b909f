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
