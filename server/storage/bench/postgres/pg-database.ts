import { createHash } from 'node:crypto';
import type pg from 'pg';
import { type Clock, systemClock } from '../../../../core/clock.js';
import { DEFAULT_DATABASE_POOL_SIZE } from '../../postgres/database-pool-size.js';
import { PgFaultGuard, withCheckedOutClient } from '../../postgres/pg-faults.js';
import { openPgPool } from '../../postgres/pg-pool.js';
import { BOARD_LOCK_CLASS } from '../sql/dialect.js';

/** Runs one statement and returns its rows. */
export type Query = <T = Record<string, unknown>>(sql: string, params?: readonly unknown[]) => Promise<T[]>;
/**
 * Runs one statement and returns its rows and how many rows it changed. In a transaction, `last`:
 * nothing follows it, so its COMMIT is sent right behind it (decision 0980).
 */
export type RawQuery = (sql: string, params: readonly unknown[], options?: { last?: boolean }) => Promise<{ rows: unknown[]; rowCount: number }>;

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
 * A database restart is a fault it survives (decision 0516), as the relay's engine does, with the
 * same code (server/storage/postgres, decision 0790): the pool (`openPgPool`) and each checked-out
 * connection (`withCheckedOutClient`) handle their `error` events, a connection that failed is
 * dropped from the pool, and `PgFaultGuard` answers connection faults with a bounded backoff (503
 * with `Retry-After`) and the database's full disk (53100) as a `StorageFullError` (507).
 */
export class PgDatabase {
  readonly pool: pg.Pool;
  /** Statements and transactions run so far (round trips: each statement is one, a transaction adds BEGIN and COMMIT). */
  readonly counters = { statements: 0, transactions: 0 };
  private readonly faults: PgFaultGuard;

  constructor(connectionString: string, options: { poolSize?: number; clock?: Clock } = {}) {
    // Pipelined connections (pg's `pipeline`): a transaction's BEGIN goes out with its first
    // statement instead of a round trip of its own (decision 0600). Nothing else sends two
    // statements at once on one connection: a plain statement has its connection to itself.
    this.pool = openPgPool(connectionString, { poolSize: options.poolSize ?? DEFAULT_DATABASE_POOL_SIZE, what: 'the database pool', config: { pipeline: true } });
    this.faults = new PgFaultGuard(options.clock ?? systemClock, 'the bench database');
  }

  /** Whether the database failed to answer since it last did (`GET /api/v1/health`). */
  get away(): boolean {
    return this.faults.away;
  }

  readonly query: Query = async <T>(sql: string, params: readonly unknown[] = []) => (await this.rawQuery(sql, params)).rows as T[];

  /**
   * One statement on any pooled connection, committed on its own; run again when it lost a race the
   * database detected (a statement that failed changed nothing, so trying it again is safe).
   */
  readonly rawQuery: RawQuery = (sql, params) =>
    this.faults.run(async () => {
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
    return this.faults.run(async () => {
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

  private transaction<T>(body: (q: RawQuery) => Promise<T>): Promise<T> {
    return withCheckedOutClient(this.pool, async (connection) => {
      // Not awaited before the first statement is sent (pipelined behind it): its answer, an error
      // included, is awaited with that statement's. A BEGIN fails only with its connection, and
      // then so does the statement behind it, so nothing runs outside the transaction.
      let begun: Promise<unknown> | undefined = connection
        .send((client) => client.query('BEGIN'))
        .then(
          () => undefined,
          (err: unknown) => ({ failed: err }),
        );
      try {
        // Sent behind the statement the body called its last (pipelined as BEGIN is): its answer
        // comes with that statement's. When the statement fails, PostgreSQL answers this COMMIT
        // with a rollback, and the statement's error is what the body throws.
        let committed: Promise<unknown> | undefined;
        const result = await body(async (sql, params, options) => {
          if (committed !== undefined) throw new Error(`a statement after the last one of its transaction: ${sql}`);
          this.counters.statements++;
          const answer = connection.send((client) => run(client, sql, params));
          if (options?.last) {
            committed = connection.send((client) => client.query('COMMIT'));
            // Awaited below, after the body; a failure before then is the statement's too.
            committed.catch(() => undefined);
          }
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
        await (committed ?? connection.send((client) => client.query('COMMIT')));
        return result;
      } catch (err) {
        // On a lost connection PostgreSQL has rolled the transaction back itself (and `send` sends nothing).
        await connection.send((client) => client.query('ROLLBACK')).catch(() => undefined);
        throw err;
      }
    });
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
