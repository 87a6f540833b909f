import { createHash } from 'node:crypto';
import { userInfo } from 'node:os';
import pg from 'pg';
import { type Clock, systemClock } from '../../../../core/clock.js';
import { ReconnectBackoff } from '../../reconnect-backoff.js';
import { isDatabaseConnectionFault, isDiskFull, StorageFullError } from '../../storage-faults.js';
import { BOARD_LOCK_CLASS } from '../sql/dialect.js';
import { DEFAULT_DATABASE_POOL_SIZE, MAX_DATABASE_POOL_SIZE } from '../../postgres/database-pool-size.js';

// BIGINT (host milliseconds, counts) as a JavaScript number: every value hilbench stores in one is
// below 2^53, and the records of bench-store.ts are numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value) => Number(value));

/** Runs one statement and returns its rows. */
export type Query = <T = Record<string, unknown>>(sql: string, params?: readonly unknown[]) => Promise<T[]>;
/** Runs one statement and returns its rows and how many rows it changed. */
export type RawQuery = (sql: string, params: readonly unknown[]) => Promise<{ rows: unknown[]; rowCount: number }>;

/**
 * SQLSTATEs after which a write transaction is run again from the start: a deadlock the database
 * broke (40P01), a serialization failure (40001), and a unique index that refused the loser of a
 * race to insert the same row (23505: the retry then reads the winner's row and answers from it).
 */
const RETRIED_SQLSTATES = new Set(['40P01', '40001', '23505']);
const WRITE_ATTEMPTS = 4;
/** Pauses between tries while the database is away (decision 0516): from a quarter second, doubling, at most 5 s. */
const RECONNECT_FIRST_MS = 250;
const RECONNECT_MAX_MS = 5_000;
/** How long a new connection may take before the request is answered 503 instead (a host that went silent). */
const CONNECT_TIMEOUT_MS = 10_000;

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

async function run(client: pg.Pool | pg.PoolClient, sql: string, params: readonly unknown[]): Promise<{ rows: unknown[]; rowCount: number }> {
  const result = await client.query({ name: statementName(sql), text: sql, values: params as unknown[] });
  return { rows: result.rows as unknown[], rowCount: result.rowCount ?? 0 };
}

/**
 * A pool of connections to the bench's PostgreSQL database. There is no global write lock
 * (decision 0515, superseding that part of 0353): each write is one short transaction whose rules
 * the database enforces with row locks (`FOR UPDATE`, `FOR UPDATE SKIP LOCKED` for claims), unique
 * indexes (one lease per board, one flashing or running job per board) and, where a rule counts
 * rows that do not exist yet (the queue limit, the lease check), a per-board advisory lock
 * (`lockBoard`). Transactions that lose a race the database detected run again (`RETRIED_SQLSTATES`).
 *
 * A database restart is a fault it survives (decision 0516): every connection's `error` event is
 * handled, a connection that failed is dropped from the pool, and while the database is away each
 * statement fails at once with `DatabaseUnavailableError` (answered 503 with `Retry-After`) until
 * the next try of a bounded backoff (`ReconnectBackoff`); a full disk on the database's side
 * (53100) is a `StorageFullError` (507).
 */
export class PgDatabase {
  readonly pool: pg.Pool;
  /** Statements and transactions run so far (round trips: each statement is one, a transaction adds BEGIN and COMMIT). */
  readonly counters = { statements: 0, transactions: 0 };
  private readonly backoff: ReconnectBackoff;

  constructor(connectionString: string, options: { poolSize?: number; clock?: Clock } = {}) {
    const poolSize = options.poolSize ?? DEFAULT_DATABASE_POOL_SIZE;
    if (!Number.isSafeInteger(poolSize) || poolSize < 1 || poolSize > MAX_DATABASE_POOL_SIZE) {
      throw new RangeError(`the database pool size must be a whole number from 1 to ${MAX_DATABASE_POOL_SIZE}; got ${poolSize}`);
    }
    // Pipelined connections (pg's `pipeline`): a transaction's BEGIN goes out with its first
    // statement instead of a round trip of its own (decision 0600). Nothing else sends two
    // statements at once on one connection: a plain statement has its connection to itself.
    this.pool = new pg.Pool({ ...pgConnection(connectionString), max: poolSize, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, pipeline: true });
    this.backoff = new ReconnectBackoff(options.clock ?? systemClock, { firstMs: RECONNECT_FIRST_MS, maxMs: RECONNECT_MAX_MS, what: 'the bench database' });
    // An idle connection the server dropped (57P01 at a restart) must not crash the process: the
    // pool has already removed it, and the next statement opens a new one.
    this.pool.on('error', () => undefined);
  }

  /** Whether the database failed to answer since it last did (`GET /api/v1/health`). */
  get away(): boolean {
    return this.backoff.away;
  }

  readonly query: Query = async <T>(sql: string, params: readonly unknown[] = []) => (await this.rawQuery(sql, params)).rows as T[];

  /**
   * One statement on any pooled connection, committed on its own; run again when it lost a race the
   * database detected (a statement that failed changed nothing, so trying it again is safe).
   */
  readonly rawQuery: RawQuery = (sql, params) =>
    this.guarded(async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          this.counters.statements++;
          return await run(this.pool, sql, params);
        } catch (err) {
          if (attempt >= WRITE_ATTEMPTS || !RETRIED_SQLSTATES.has((err as { code?: string }).code ?? '')) throw err;
        }
      }
    });

  /** Runs `body` in one transaction (READ COMMITTED), again when it lost a race; rolls back when it throws. */
  write<T>(body: (q: Query) => Promise<T>): Promise<T> {
    return this.writeRaw((raw) => body(async <R>(sql: string, params: readonly unknown[] = []) => (await raw(sql, params)).rows as R[]));
  }

  /** As `write`, with statements that also tell how many rows they changed. */
  writeRaw<T>(body: (q: RawQuery) => Promise<T>): Promise<T> {
    return this.guarded(async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          this.counters.transactions++;
          return await this.transaction(body);
        } catch (err) {
          if (attempt >= WRITE_ATTEMPTS || !RETRIED_SQLSTATES.has((err as { code?: string }).code ?? '')) throw err;
        }
      }
    });
  }

  /** `fn` unless the database is away; its connection faults and full disk as the storage faults they are. */
  private async guarded<T>(fn: () => Promise<T>): Promise<T> {
    this.backoff.check();
    try {
      const result = await fn();
      this.backoff.succeeded();
      return result;
    } catch (err) {
      if (isDatabaseConnectionFault(err)) throw this.backoff.failed(err);
      this.backoff.succeeded();
      if (isDiskFull(err)) throw new StorageFullError(`the bench database's disk is full (${(err as Error).message})`, 60, { cause: err });
      throw err;
    }
  }

  private async transaction<T>(body: (q: RawQuery) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    // A checked-out client has no listener of the pool's: a connection ended between two statements
    // (57P01 at a restart) would otherwise be an unhandled 'error' event, which ends the process.
    let lost: unknown;
    const onError = (err: unknown) => {
      lost = err;
    };
    client.on('error', onError);
    try {
      // Not awaited before the first statement is sent (pipelined behind it): its answer, an error
      // included, is awaited with that statement's. A BEGIN fails only with its connection, and
      // then so does the statement behind it, so nothing runs outside the transaction.
      let begun: Promise<unknown> | undefined = client.query('BEGIN').then(
        () => undefined,
        (err: unknown) => ({ failed: err }),
      );
      const result = await body(async (sql, params) => {
        this.counters.statements++;
        const answer = run(client, sql, params);
        if (begun !== undefined) {
          const began = await begun;
          begun = undefined;
          if (began !== undefined) {
            await answer.catch(() => undefined);
            throw (began as { failed: unknown }).failed;
          }
        }
        return answer;
      });
      // A body without statements still began the transaction; its answer is in before COMMIT's.
      const began = await begun;
      if (began !== undefined) throw (began as { failed: unknown }).failed;
      await client.query('COMMIT');
      return result;
    } catch (err) {
      if (isDatabaseConnectionFault(err)) lost ??= err;
      // On a lost connection PostgreSQL has rolled the transaction back itself.
      if (lost === undefined) await client.query('ROLLBACK').catch(() => undefined);
      throw lost !== undefined && !isDatabaseConnectionFault(err) ? lost : err;
    } finally {
      client.off('error', onError);
      // A connection that failed is dropped from the pool, never handed out again.
      client.release(lost instanceof Error ? lost : lost === undefined ? undefined : new Error(String(lost)));
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
