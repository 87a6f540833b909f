import { fieldValueError, HttpError } from '../../http/http-error.js';
import { BenchError, type BenchErrorCode } from '../domain/bench-errors.js';

/**
 * The one place a bench error gets its HTTP status. A `Record` over every code: a code added to
 * the catalog without a status does not compile (and `bench-errors.test.ts` checks it at run time).
 */
export const BENCH_ERROR_STATUS: Readonly<Record<BenchErrorCode, number>> = {
  not_authenticated: 401,
  invalid_authorization_header: 401,
  invalid_token: 401,
  board_not_found: 404,
  board_offline: 503,
  board_health_check_running: 409,
  board_leased: 409,
  session_not_found: 404,
  session_not_active: 409,
  session_other_board: 409,
  queue_full: 429,
  job_not_found: 404,
  firmware_invalid: 422,
  board_health_unsupported: 409,
  health_check_unsupported: 409,
  health_check_backend_unavailable: 409,
  health_check_already_running: 409,
  board_not_idle: 409,
  invalid_worker_token: 401,
  worker_revoked: 403,
  worker_not_found: 404,
  worker_not_revocable: 409,
  board_not_served: 403,
  job_not_held: 409,
  no_local_worker: 409,
  job_not_running: 409,
  serial_input_full: 429,
  health_check_not_found: 404,
  health_check_not_held: 409,
  too_many_long_polls: 429,
  debugger_attached: 409,
  job_not_debuggable: 409,
};

/** `WWW-Authenticate` of each 401, as RFC 6750 words the three cases. */
const WWW_AUTHENTICATE: Partial<Record<BenchErrorCode, string>> = {
  not_authenticated: 'Bearer',
  invalid_authorization_header: 'Bearer error="invalid_request"',
  invalid_token: 'Bearer error="invalid_token"',
  invalid_worker_token: 'Bearer error="invalid_token"',
};

/** `err` as the answer the error handler writes: `{"detail"}` with its status and headers. */
export function httpErrorOfBench(err: BenchError): HttpError {
  const status = BENCH_ERROR_STATUS[err.code];
  const { field, retryAfterSeconds } = err.extra;
  // A field error is a 422 in pydantic's words, located on the field, like every other 422.
  if (status === 422 && field) return fieldValueError(field.name, err.detail, field.input);
  const headers: Record<string, string> = {};
  const authenticate = WWW_AUTHENTICATE[err.code];
  if (authenticate !== undefined) headers['WWW-Authenticate'] = authenticate;
  if (retryAfterSeconds !== undefined) headers['Retry-After'] = String(retryAfterSeconds);
  return new HttpError(status, err.detail, headers);
}

/** A bench error mapped to its HTTP answer; anything else passed on as it is (the error handler decides). */
export function toHttpError(err: unknown): unknown {
  return err instanceof BenchError ? httpErrorOfBench(err) : err;
}

/** `fn` with bench errors mapped at the edge: what route handlers and guards run. */
export function mapBenchErrors<A extends unknown[], R>(fn: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args: A) => {
    try {
      return await fn(...args);
    } catch (err) {
      throw toHttpError(err);
    }
  };
}
