import { z } from 'zod';
import { validationErrorItemSchema } from '../../wire/problem-detail.js';

/**
 * The errors a `BenchClient` throws: one class per way a call can fail, so callers catch what
 * they can act on (`instanceof BenchBusyError`) instead of comparing status numbers.
 */

/** One FastAPI-style validation issue of a 422 answer. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

const validationDetailSchema = z.array(validationErrorItemSchema);

/** The service answered with an error status; `detail` is its `{"detail": ...}`. */
export class BenchApiError extends Error {
  override name = 'BenchApiError';
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly detail: unknown,
    /** Seconds the service asked to wait before trying again (`Retry-After`), when it said. */
    readonly retryAfterSeconds?: number,
  ) {
    super(`${method} ${path} answered ${status}: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`);
  }
}

/** 401 or 403: the token is missing, unknown, or not allowed to do this. */
export class BenchAuthError extends BenchApiError {
  override name = 'BenchAuthError';
}

/** 404: no such board, session or job of this agent. */
export class BenchNotFoundError extends BenchApiError {
  override name = 'BenchNotFoundError';
}

/** 409: the board is busy or held by someone else, or the job is not in a state that allows this. */
export class BenchBusyError extends BenchApiError {
  override name = 'BenchBusyError';
}

/** 422: the request failed validation; `issues` say which field and why. */
export class BenchValidationError extends BenchApiError {
  override name = 'BenchValidationError';
  get issues(): ValidationIssue[] {
    const parsed = validationDetailSchema.safeParse(this.detail);
    return parsed.success ? parsed.data : [];
  }
}

/** 429: a limit of the service (jobs queued per board, registrations per minute). */
export class BenchRateLimitError extends BenchApiError {
  override name = 'BenchRateLimitError';
}

/** 503 (or another 5xx): the service cannot serve this now. */
export class BenchUnavailableError extends BenchApiError {
  override name = 'BenchUnavailableError';
}

/** The call did not finish within its `timeoutMs` (the client gave up; the service may still act on it). */
export class BenchTimeoutError extends Error {
  override name = 'BenchTimeoutError';
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
    /** What was last seen, for waits (a job's state, the UART so far). */
    readonly lastSeen = '',
  ) {
    super(`${what}: no answer within ${timeoutMs} ms${lastSeen ? `; last seen: ${lastSeen}` : ''}`);
  }
}

/** The error class of an answer's status. */
export function benchApiError(method: string, path: string, status: number, detail: unknown, retryAfterSeconds?: number): BenchApiError {
  const args = [method, path, status, detail, retryAfterSeconds] as const;
  if (status === 401 || status === 403) return new BenchAuthError(...args);
  if (status === 404) return new BenchNotFoundError(...args);
  if (status === 409) return new BenchBusyError(...args);
  if (status === 422) return new BenchValidationError(...args);
  if (status === 429) return new BenchRateLimitError(...args);
  if (status >= 500) return new BenchUnavailableError(...args);
  return new BenchApiError(...args);
}
