import { isDiskFull, StorageFault, StorageFullError } from '../storage/storage-faults.js';
import { HttpError } from './http-error.js';

/**
 * The answer to a storage fault (`server/storage/storage-faults.ts`), the same for every service: 503
 * while its database is away, 507 (Insufficient Storage, RFC 4918) while its disk is full, both
 * with `Retry-After` and a `detail` naming the service; undefined for any other error.
 */
export function storageFaultAnswer(err: unknown, service: string): HttpError | undefined {
  const fault = storageFaultOf(err);
  if (!fault) return undefined;
  const headers = { 'Retry-After': String(fault.retryAfterSeconds) };
  if (fault.kind === 'database-unavailable') {
    return new HttpError(503, `the ${service}'s database is unavailable (restarting or unreachable); try again in ${fault.retryAfterSeconds} s`, headers);
  }
  return new HttpError(
    507,
    `the ${service}'s storage is full: nothing more can be stored until space is freed on its data directory's disk; reads still work; try again in ${fault.retryAfterSeconds} s`,
    headers,
  );
}

/**
 * `err` as a storage fault: one already, or a full disk met by a store that does not know the
 * words (SQLite's SQLITE_FULL, ENOSPC from a file write), looked for along its causes.
 */
function storageFaultOf(err: unknown): StorageFault | undefined {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof StorageFault) return e;
    if (isDiskFull(e)) return new StorageFullError((e as Error).message ?? 'the disk is full', FULL_DISK_RETRY_AFTER_SECONDS, { cause: e });
  }
  return undefined;
}

/** Freeing a disk takes an operator: a minute between tries. */
export const FULL_DISK_RETRY_AFTER_SECONDS = 60;
