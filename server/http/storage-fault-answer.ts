import { StorageFault } from '../db/storage-faults.js';
import { HttpError } from './http-error.js';

/**
 * The answer to a storage fault (`server/db/storage-faults.ts`), the same for every service: 503
 * while its database is away, 507 (Insufficient Storage, RFC 4918) while its disk is full, both
 * with `Retry-After` and a `detail` naming the service; undefined for any other error.
 */
export function storageFaultAnswer(err: unknown, service: string): HttpError | undefined {
  if (!(err instanceof StorageFault)) return undefined;
  const headers = { 'Retry-After': String(err.retryAfterSeconds) };
  if (err.kind === 'database-unavailable') {
    return new HttpError(503, `the ${service}'s database is unavailable (restarting or unreachable); try again in ${err.retryAfterSeconds} s`, headers);
  }
  return new HttpError(
    507,
    `the ${service}'s storage is full: nothing more can be stored until space is freed on its data directory's disk; reads still work; try again in ${err.retryAfterSeconds} s`,
    headers,
  );
}
