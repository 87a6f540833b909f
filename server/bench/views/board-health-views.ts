import { NANOS_PER_SECOND } from '../../../backends/backend.js';
import type { BoardHealthCheckBody, BoardReleaseBody } from '../../../wire/bench/bench-schemas.js';
import type { BoardAfterAdmin, BoardHealthCheck } from '../domain/kept-board-health.js';
import { healthBody } from './bench-views.js';

/** `POST /admin/boards/{board}/release`: the board (or instance) as it is right after. */
export function boardReleaseBody(after: BoardAfterAdmin): BoardReleaseBody {
  return { board: after.board, status: after.status, offline_reason: after.offlineReason, health: healthBody(after.health) };
}

/** `POST /admin/boards/{board}/health-check`: what the check said, then the board (or instance) as it is right after. */
export function boardHealthCheckBody(check: BoardHealthCheck): BoardHealthCheckBody {
  const { outcome } = check;
  return {
    board: check.board,
    passed: outcome.passed,
    reason: outcome.passed ? null : outcome.reason,
    uart_text: outcome.uartText,
    elapsed_seconds: outcome.passed ? outcome.elapsedNanos / NANOS_PER_SECOND : null,
    status: check.status,
    offline_reason: check.offlineReason,
    health: healthBody(check.health),
  };
}
