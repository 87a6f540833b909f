/**
 * Faults of the storage under a service that are not bugs and pass by themselves: the database is
 * away (restarting, unreachable) or the disk under the data directory is full. Data access throws
 * these; the HTTP layer answers them 503 and 507 with `Retry-After` (`server/http/storage-fault-answer.ts`);
 * nothing else names them.
 */
export abstract class StorageFault extends Error {
  abstract readonly kind: 'database-unavailable' | 'storage-full';
  constructor(
    message: string,
    /** Seconds after which trying again may work (the `Retry-After` of the answer). */
    readonly retryAfterSeconds: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The database did not answer: a restart, a lost connection, a server not accepting connections yet. */
export class DatabaseUnavailableError extends StorageFault {
  override readonly name = 'DatabaseUnavailableError';
  readonly kind = 'database-unavailable' as const;
}

/** The disk under the data directory (or the database's) is full: nothing more can be stored now. */
export class StorageFullError extends StorageFault {
  override readonly name = 'StorageFullError';
  readonly kind = 'storage-full' as const;
}

/**
 * SQLSTATE classes and codes that mean the connection, not the statement, failed: 08 (connection
 * exception), 57P01-57P03 (administrator shutdown, crash shutdown, cannot connect now), 53300 (too
 * many connections); and the socket errors of a server that is down or went away.
 */
const CONNECTION_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
const SOCKET_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOENT', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
// "Query read timeout" is pg's `query_timeout`: a connection that gave no answer for that long is
// taken for a lost one (a silent network), dropped from the pool, and the request answered 503.
const CONNECTION_MESSAGES = [/connection terminated/i, /not queryable/i, /timeout exceeded when trying to connect/i, /connection (?:is )?(?:closed|ended)/i, /^query read timeout$/i];

/** Whether `err` (from `pg`, or a PostgreSQL error passed on by code and message) says the database connection failed. */
export function isDatabaseConnectionFault(err: unknown): boolean {
  if (err instanceof DatabaseUnavailableError) return true;
  if (typeof err !== 'object' || err === null) return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (code.startsWith('08') || CONNECTION_SQLSTATES.has(code) || SOCKET_ERRNOS.has(code))) return true;
  return typeof message === 'string' && CONNECTION_MESSAGES.some((pattern) => pattern.test(message));
}

/** Whether `err` says the disk is full: ENOSPC / EDQUOT from the file system, SQLITE_FULL, PostgreSQL's 53100 (disk full). */
export function isDiskFull(err: unknown): boolean {
  if (err instanceof StorageFullError) return true;
  if (typeof err !== 'object' || err === null) return false;
  const { code } = err as { code?: unknown };
  return code === 'ENOSPC' || code === 'EDQUOT' || code === 'SQLITE_FULL' || code === '53100';
}
