import { userInfo } from 'node:os';
import pg from 'pg';

// BIGINT (host milliseconds, counts) as a JavaScript number: every value hilbench stores in one is
// below 2^53, and the records of bench-store.ts are numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value) => Number(value));

/** Runs one statement and returns its rows. */
export type Query = <T = Record<string, unknown>>(sql: string, params?: readonly unknown[]) => Promise<T[]>;

/** The one advisory lock every write transaction takes: writes from every replica run one at a time. */
const WRITE_LOCK_KEY = 0x68696c62; // 'hilb'

/**
 * A pool on the bench's PostgreSQL database. Reads run on any connection; every write runs in a
 * transaction that first takes one transaction-scoped advisory lock, so a check and the write
 * that depends on it (a lease, a claim, the queue limit) are one step for every replica, exactly
 * as SQLite's `BEGIN IMMEDIATE` makes them for one process (decision 0353). The lock is released
 * by the database at commit, rollback or when the connection dies (a replica killed mid-write).
 */
export class PgDatabase {
  readonly pool: pg.Pool;

  constructor(connectionString: string, options: { maxConnections?: number } = {}) {
    this.pool = new pg.Pool({ ...pgConnection(connectionString), max: options.maxConnections ?? 10 });
    // An idle connection the server dropped must not crash the process; the next query reconnects.
    this.pool.on('error', () => undefined);
  }

  readonly query: Query = async <T>(sql: string, params: readonly unknown[] = []) => (await this.pool.query(sql, params as unknown[])).rows as T[];

  /** Runs `body` in a write transaction (under the write lock); rolls back when it throws. */
  async write<T>(body: (q: Query) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [WRITE_LOCK_KEY]);
      const q: Query = async <R>(sql: string, params: readonly unknown[] = []) => (await client.query(sql, params as unknown[])).rows as R[];
      const result = await body(q);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
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
