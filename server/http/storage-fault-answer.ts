import { DatabaseBusyError, DatabaseUnavailableError, isDatabaseBusy, isDiskFull, isPostgresConnectionFault, StorageFault, StorageFullError } from '../storage/storage-faults.js';
import { HttpError } from './http-error.js';

/**
 * The answer to a storage fault (`server/storage/storage-faults.ts`), the same for every service: 503
 * while its database is away or busy, 507 (Insufficient Storage, RFC 4918) while its disk is full,
 * each with `Retry-After` and a `detail` naming the service; undefined for any other error.
 */
export function storageFaultAnswer(err: unknown, service: string): HttpError | undefined {
  const fault = storageFaultOf(err);
  if (!fault) return undefined;
  const headers = { 'Retry-After': String(fault.retryAfterSeconds) };
  if (fault.kind === 'database-unavailable') {
    return new HttpError(503, `the ${service}'s database is unavailable (restarting or unreachable); try again in ${fault.retryAfterSeconds} s`, headers);
  }
  if (fault.kind === 'database-busy') {
    return new HttpError(503, `the ${service}'s database is busy (another writer holds it); nothing was changed; try again in ${fault.retryAfterSeconds} s`, headers);
  }
  return new HttpError(
    507,
    `the ${service}'s storage is full: nothing more can be stored until space is freed on its data directory's disk; reads still work; try again in ${fault.retryAfterSeconds} s`,
    headers,
  );
}

/**
 * `err` as a storage fault: one already, or one met by a store that does not know the words, looked
 * for along its causes: a full disk (SQLite's SQLITE_FULL, ENOSPC from a file write), SQLite busy
 * or locked past its busy timeout, or PostgreSQL's word that the connection failed that reached
 * here past the engine's guard (`PgFaultGuard`, decision 0790, which answers a lost database the
 * same 503; its backoff is the guard's, so here a second's wait is asked).
 */
function storageFaultOf(err: unknown): StorageFault | undefined {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof StorageFault) return e;
    const message = (e as { message?: unknown }).message;
    const words = typeof message === 'string' ? message : String(e);
    if (isDiskFull(e)) return new StorageFullError(words, FULL_DISK_RETRY_AFTER_SECONDS, { cause: e });
    if (isDatabaseBusy(e)) return new DatabaseBusyError(words, DATABASE_RETRY_AFTER_SECONDS, { cause: e });
    if (isPostgresConnectionFault(e)) return new DatabaseUnavailableError(words, DATABASE_RETRY_AFTER_SECONDS, { cause: e });
  }
  return undefined;
}

/** Freeing a disk takes an operator: a minute between tries. */
export const FULL_DISK_RETRY_AFTER_SECONDS = 60;

/** A busy database, or a lost connection no guard's backoff timed: the least `Retry-After` (the guard's first pause is a quarter second). */
const DATABASE_RETRY_AFTER_SECONDS = 1;
