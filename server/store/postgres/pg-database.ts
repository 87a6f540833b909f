import { createHash } from 'node:crypto';
import { userInfo } from 'node:os';
import pg from 'pg';
import { DEFAULT_DATABASE_POOL_SIZE, MAX_DATABASE_POOL_SIZE } from './database-pool-size.js';

// BIGINT (host milliseconds, counts) as a JavaScript number: every value hilbench stores in one is
// below 2^53, and the records of bench-store.ts are numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value) => Number(value));

/** Runs one statement and returns its rows. */
export type Query = <T = Record<string, unknown>>(sql: string, params?: readonly unknown[]) => Promise<T[]>;


/** First key of the two-key advisory locks of the bench store ('hilb'); the second is the board's hash. */
const BOARD_LOCK_CLASS = 0x68696c62;

/**
 * SQLSTATEs after which a write transaction is run again from the start: a deadlock the database
 * broke (40P01), a serialization failure (40001), and a unique index that refused the loser of a
 * race to insert the same row (23505: the retry then reads the winner's row and answers from it).
 */
const RETRIED_SQLSTATES = new Set(['40P01', '40001', '23505']);
const WRITE_ATTEMPTS = 4;

/** Statement names by SQL text: each text is prepared once per connection and reused (pg's named statements). */
const statementNames = new Map<string, string>();
function statementName(sql: string): string {
  let name = statementNames.get(sql);
  if (name === undefined) {
    name = `hb_${createHash('sha256').update(sql).digest('hex').slice(0, 24)}`;
    statementNames.set(sql, name);
  }
  return name;
}

async function run<T>(client: pg.Pool | pg.PoolClient, sql: string, params: readonly unknown[]): Promise<T[]> {
  return (await client.query({ name: statementName(sql), text: sql, values: params as unknown[] })).rows as T[];
}

/**
 * A pool of connections to the bench's PostgreSQL database. There is no global write lock
 * (decision 0515, superseding that part of 0353): each write is one short transaction whose rules
 * the database enforces with row locks (`FOR UPDATE`, `FOR UPDATE SKIP LOCKED` for claims), unique
 * indexes (one lease per board, one flashing or running job per board) and, where a rule counts
 * rows that do not exist yet (the queue limit, the lease check), a per-board advisory lock
 * (`lockBoard`). Transactions that lose a race the database detected run again (`RETRIED_SQLSTATES`).
 */
export class PgDatabase {
  readonly pool: pg.Pool;

  constructor(connectionString: string, options: { poolSize?: number } = {}) {
    const poolSize = options.poolSize ?? DEFAULT_DATABASE_POOL_SIZE;
    if (!Number.isSafeInteger(poolSize) || poolSize < 1 || poolSize > MAX_DATABASE_POOL_SIZE) {
      throw new RangeError(`the database pool size must be a whole number from 1 to ${MAX_DATABASE_POOL_SIZE}; got ${poolSize}`);
    }
    this.pool = new pg.Pool({ ...pgConnection(connectionString), max: poolSize });
    // An idle connection the server dropped must not crash the process; the next query reconnects.
    this.pool.on('error', () => undefined);
  }

  readonly query: Query = <T>(sql: string, params: readonly unknown[] = []) => run<T>(this.pool, sql, params);

  /** Runs `body` in one transaction (READ COMMITTED), again when it lost a race; rolls back when it throws. */
  async write<T>(body: (q: Query) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.transaction(body);
      } catch (err) {
        if (attempt >= WRITE_ATTEMPTS || !RETRIED_SQLSTATES.has((err as { code?: string }).code ?? '')) throw err;
      }
    }
  }

  private async transaction<T>(body: (q: Query) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await body(<R>(sql: string, params: readonly unknown[] = []) => run<R>(client, sql, params));
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

/**
 * Takes the advisory lock of `board` until the transaction ends: writes that check rows which do
 * not exist yet (a free board before a lease, the queue length before a job) take it, so two
 * replicas cannot both pass the check; writes on other boards do not wait.
 */
export async function lockBoard(q: Query, board: string): Promise<void> {
  await q('SELECT pg_advisory_xact_lock($1, hashtext($2))', [BOARD_LOCK_CLASS, board]);
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
