import type { Dialect } from './dialect.js';
import type { Steps } from '../../sql-steps.js';

/**
 * Where the store's rules run (decision 0545): one implementation per database. Both answer
 * asynchronously, so the store's users never wait on the database synchronously, whichever it is.
 */
export interface SqlExecutor {
  readonly dialect: Dialect;
  /**
   * Runs `steps` as plain statements, each committed on its own: reads, and writes of one statement
   * (which need no transaction; on PostgreSQL one that lost a race the database detected runs again).
   */
  plain<T>(steps: () => Steps<T>): Promise<T>;
  /**
   * Runs `steps` in one transaction with the dialect's locking: SQLite takes the write lock first
   * (`BEGIN IMMEDIATE`); PostgreSQL runs READ COMMITTED with row and advisory locks the steps take,
   * and runs `steps` again from the start when it lost a race the database detected (so `steps`
   * is a function: each try gets fresh steps).
   */
  transaction<T>(steps: () => Steps<T>): Promise<T>;
  /** How many statements and transactions ran so far (the benchmark reports them per job). */
  readonly counters: { statements: number; transactions: number };
  close(): Promise<void>;
}
