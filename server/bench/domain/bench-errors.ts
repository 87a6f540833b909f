/**
 * The bench's domain errors: one stable code per way a request can be refused, and the detail
 * the caller reads. Domain code (agents, sessions, jobs, board health) throws `BenchError` and
 * never chooses an HTTP status; the route layer maps each code to one, once
 * (`bench-error-http.ts`), as Fastify's `lib/errors.js` catalog and Hono's `HTTPException` do.
 */
export const BENCH_ERROR_CODES = [
  /** No `authorization` header. */
  'not_authenticated',
  /** An `authorization` header that is not `Bearer hb_...`. */
  'invalid_authorization_header',
  /** A well-formed token no agent has. */
  'invalid_token',
  'board_not_found',
  /** The board's backend cannot run it now (the detail says why). */
  'board_offline',
  /** An administrator's health check holds the board. */
  'board_health_check_running',
  /** Someone (or a flash job) holds a lease on the board. */
  'board_leased',
  'session_not_found',
  /** The session ended or expired (or is otherwise not active). */
  'session_not_active',
  /** A job names a session that holds another board. */
  'session_other_board',
  /** Too many jobs wait on the board. */
  'queue_full',
  'job_not_found',
  /** The uploaded firmware does not parse or cannot run on the board (a field error). */
  'firmware_invalid',
  /** No backend of the board keeps board health. */
  'board_health_unsupported',
  /** The board's backend keeps health but has no health-check run. */
  'health_check_unsupported',
  /** The board's backend cannot run a health check now (the detail quotes why). */
  'health_check_backend_unavailable',
  /** A health check already runs on the board. */
  'health_check_already_running',
  /** A health check needs the board to itself: it is leased or has jobs. */
  'board_not_idle',
  /** A well-formed worker token no worker has (worker protocol). */
  'invalid_worker_token',
  /** The worker's token was revoked by an administrator. */
  'worker_revoked',
  'worker_not_found',
  /** The worker runs inside a bench service (it has no token): it stops with that service, not by revocation. */
  'worker_not_revocable',
  /** A worker asked for jobs of, or reported, a board it does not serve. */
  'board_not_served',
  /** A worker reported on a job it does not hold (not claimed by it, or finished meanwhile). */
  'job_not_held',
  /** The bench runs no worker in its process, so it cannot run this itself. */
  'no_local_worker',
  /** Serial input for a job that is not running. */
  'job_not_running',
  /** Too much serial input of a job waits for its worker. */
  'serial_input_full',
  /** A worker reported a health check that is not one of its own (worker protocol). */
  'health_check_not_found',
  /** A worker reported a health check that ended already (it ran past its deadline). */
  'health_check_not_held',
  /**
   * A worker waits in more long polls (claims, or serial input of one job) than it ever needs at
   * once (decision 0470), or an agent holds more requests open (waits, streams) than its bound (decision 0471).
   */
  'too_many_long_polls',
  /** A debugger is already attached to the debug job (one at a time, issue 32). */
  'debugger_attached',
  /** The job cannot take a debugger: it is queued, finished, or was not submitted for debugging. */
  'job_not_debuggable',
] as const;

export type BenchErrorCode = (typeof BENCH_ERROR_CODES)[number];

/** What an error says besides its detail, for the edge to turn into headers or a field error. */
export interface BenchErrorExtra {
  /** When trying again makes sense, in whole seconds (`Retry-After`). */
  retryAfterSeconds?: number;
  /** The form field at fault and the value it had (`firmware_invalid`). */
  field?: { name: string; input: unknown };
}

/** A refusal of the bench, by catalog code; `detail` is what the caller reads, word for word. */
export class BenchError extends Error {
  override readonly name = 'BenchError';
  constructor(
    readonly code: BenchErrorCode,
    readonly detail: string,
    readonly extra: BenchErrorExtra = {},
  ) {
    super(detail);
  }
}
