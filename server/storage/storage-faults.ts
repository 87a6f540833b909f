/**
 * Faults of the storage under a service that are not bugs and pass by themselves: the database is
 * away (restarting, unreachable) or busy (another writer holds SQLite's lock), or the disk under the
 * data directory is full. Data access throws these; the HTTP layer answers them 503 and 507 with
 * `Retry-After` (`server/http/storage-fault-answer.ts`); nothing else names them.
 */
export abstract class StorageFault extends Error {
  abstract readonly kind: 'database-unavailable' | 'database-busy' | 'storage-full';
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

/** The database is locked by another writer past its busy timeout (SQLite's SQLITE_BUSY, SQLITE_LOCKED): try again shortly. */
export class DatabaseBusyError extends StorageFault {
  override readonly name = 'DatabaseBusyError';
  readonly kind = 'database-busy' as const;
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
  if (isPostgresConnectionFault(err)) return true;
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' && SOCKET_ERRNOS.has(code);
}

/**
 * Whether `err` is PostgreSQL's own word (an SQLSTATE, a message of `pg`'s) that the connection
 * failed: `isDatabaseConnectionFault` without the socket errors, which a peer, a file or any other
 * connection gives too. What the HTTP edge takes for a lost database when it meets one raw, past
 * the engine's guard (`storage-fault-answer.ts`); the guard, which knows the error came from the
 * database, takes socket errors too.
 */
export function isPostgresConnectionFault(err: unknown): boolean {
  if (err instanceof DatabaseUnavailableError) return true;
  if (typeof err !== 'object' || err === null) return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (code.startsWith('08') || CONNECTION_SQLSTATES.has(code))) return true;
  return typeof message === 'string' && CONNECTION_MESSAGES.some((pattern) => pattern.test(message));
}

/** Whether `err` is SQLite's busy or locked database (better-sqlite3's codes, with their extended forms such as SQLITE_BUSY_SNAPSHOT). */
export function isDatabaseBusy(err: unknown): boolean {
  if (err instanceof DatabaseBusyError) return true;
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' && /^SQLITE_(?:BUSY|LOCKED)(?:_[A-Z]+)?$/.test(code);
}

/** Whether `err` says the disk is full: ENOSPC / EDQUOT from the file system, SQLITE_FULL, PostgreSQL's 53100 (disk full). */
export function isDiskFull(err: unknown): boolean {
  if (err instanceof StorageFullError) return true;
  if (typeof err !== 'object' || err === null) return false;
  const { code } = err as { code?: unknown };
  return code === 'ENOSPC' || code === 'EDQUOT' || code === 'SQLITE_FULL' || code === '53100';
}
