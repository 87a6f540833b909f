/**
 * Health checks of boards on bench workers (decision 0421): an administrator's request, kept in
 * the store so every replica sees that it holds its board, claimed by the worker serving the
 * board over its outbound claim, and finished with the worker's outcome. One check per board is
 * requested or running at a time.
 */

/** `refused`: the worker could not check the board at all (no health-check run there): the administrator's 409. */
export type HealthCheckOutcomeRecord =
  | { passed: true; uartText: string; elapsedNanos: number }
  | { passed: false; reason: string; uartText: string; refused?: boolean };

/** The stored outcome of a check the server ended itself (interrupted, its worker revoked, lapsed). */
export function failedOutcomeJson(reason: string): string {
  return JSON.stringify({ passed: false, reason, uartText: '' } satisfies HealthCheckOutcomeRecord);
}

export const healthCheckStates = ['requested', 'running', 'done'] as const;
export type HealthCheckState = (typeof healthCheckStates)[number];

export interface HealthCheckRecord {
  checkId: string;
  board: string;
  /** The worker asked to run it. */
  workerId: string;
  state: HealthCheckState;
  requestedAtMs: number;
  /** Host ms the worker gives the backend; the request lapses `timeoutMs` plus the caller's grace after `requestedAtMs`. */
  timeoutMs: number;
  startedAtMs: number | null;
  finishedAtMs: number | null;
  outcome: HealthCheckOutcomeRecord | null;
}

export type RequestHealthCheckResult = { kind: 'requested'; check: HealthCheckRecord } | { kind: 'already-active'; check: HealthCheckRecord };

export interface HealthCheckStore {
  /** Records a request, unless a check of the board is requested or running (that one is answered). */
  request(request: { checkId: string; board: string; workerId: string; timeoutMs: number; nowMs: number }): Promise<RequestHealthCheckResult>;
  /** The oldest check requested of `workerId` on one of `boards`, moved to `running`. */
  claim(workerId: string, boards: readonly string[], nowMs: number): Promise<HealthCheckRecord | undefined>;
  /** Records the outcome of a check `workerId` runs; undefined (nothing changed) when it is not running for that worker. */
  finish(checkId: string, workerId: string, outcome: HealthCheckOutcomeRecord, nowMs: number): Promise<HealthCheckRecord | undefined>;
  get(checkId: string): Promise<HealthCheckRecord | undefined>;
  /** Checks requested or running: each holds its board. */
  active(): Promise<HealthCheckRecord[]>;
  /**
   * Fails, with `reason`, every check `workerId` was running (it restarted under them: nothing will
   * report them); checks it has not claimed yet stay requested for it. Returns those it failed.
   */
  interrupt(workerId: string, options: { reason: string; nowMs: number }): Promise<HealthCheckRecord[]>;
  /**
   * Fails, with `reason`, every check requested of or running on `workerId` (an administrator
   * revoked it: it can neither claim nor report one again, and each would hold its board until
   * its deadline). Returns those it failed; a late outcome changes nothing.
   */
  failAllOf(workerId: string, options: { reason: string; nowMs: number }): Promise<HealthCheckRecord[]>;
  /**
   * Fails, with `reason`, every check still requested or running whose
   * `requestedAtMs + timeoutMs + graceMs <= nowMs` (its worker never answered). Safe on every
   * replica at once (a check ends once).
   */
  expire(nowMs: number, options: { graceMs: number; reason: string }): Promise<HealthCheckRecord[]>;
}

/** A `board_health_checks` row, as both stores keep it. */
export interface HealthCheckRow {
  check_id: string;
  board: string;
  worker_id: string;
  state: HealthCheckState;
  requested_at_ms: number;
  timeout_ms: number;
  started_at_ms: number | null;
  finished_at_ms: number | null;
  outcome_json: string | null;
}

export function healthCheckFromRow(r: HealthCheckRow): HealthCheckRecord {
  return {
    checkId: r.check_id,
    board: r.board,
    workerId: r.worker_id,
    state: r.state,
    requestedAtMs: r.requested_at_ms,
    timeoutMs: r.timeout_ms,
    startedAtMs: r.started_at_ms,
    finishedAtMs: r.finished_at_ms,
    outcome: r.outcome_json === null ? null : (JSON.parse(r.outcome_json) as HealthCheckOutcomeRecord),
  };
}
