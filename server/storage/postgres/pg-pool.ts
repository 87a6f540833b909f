import { userInfo } from 'node:os';
import pg from 'pg';
import { MAX_DATABASE_POOL_SIZE } from './database-pool-size.js';

// BIGINT (host milliseconds, counts) as a JavaScript number: every value hilbench stores in one is
// below 2^53, and the records of both services' stores are numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value) => Number(value));

/** How long a new connection may take before the request is answered 503 instead (a host that went silent). */
const CONNECT_TIMEOUT_MS = 10_000;

export interface PgPoolOptions {
  /** Connections of the pool, 1 to `MAX_DATABASE_POOL_SIZE`. */
  poolSize: number;
  /** The pool in the words of a refused size, e.g. "the relay database pool". */
  what: string;
  /** Settings of this service's connections on top of the shared ones (pg's `PoolConfig`). */
  config?: pg.PoolConfig;
}

/**
 * The one opener of both services' PostgreSQL pools (decision 0790): connection settings as libpq
 * reads the URL, a bounded connect, and an idle connection the server dropped (57P01 at a restart)
 * handled: the pool has already removed it, the next statement opens a new one, and the process
 * lives on. Checked-out connections are `withCheckedOutClient`'s (pg-faults.ts).
 */
export function openPgPool(url: string, options: PgPoolOptions): pg.Pool {
  const { poolSize } = options;
  if (!Number.isSafeInteger(poolSize) || poolSize < 1 || poolSize > MAX_DATABASE_POOL_SIZE) {
    throw new RangeError(`${options.what} size must be a whole number from 1 to ${MAX_DATABASE_POOL_SIZE}; got ${poolSize}`);
  }
  const pool = new pg.Pool({ ...pgConnection(url), connectionTimeoutMillis: CONNECT_TIMEOUT_MS, ...options.config, max: poolSize });
  pool.on('error', () => undefined);
  return pool;
}

/** `url` with any password replaced, for logs and error messages. */
export function redactDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url.replace(/:[^:@/]*@/, ':***@');
  }
}

/**
 * Connection settings for `url`. As libpq (psql) does, a URL without a user name connects as the
 * operating-system user, e.g. `postgresql:///hilbench?host=/var/run/postgresql` over the local
 * socket (such a URL carries only host, port, database and password).
 */
export function pgConnection(url: string): pg.ClientConfig {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { connectionString: url };
  }
  if (parsed.username !== '') return { connectionString: url };
  return {
    host: parsed.searchParams.get('host') ?? (parsed.hostname || undefined),
    port: parsed.port ? Number(parsed.port) : undefined,
    database: decodeURIComponent(parsed.pathname.replace(/^\//, '')) || undefined,
    password: parsed.password || undefined,
    user: userInfo().username,
  };
}
