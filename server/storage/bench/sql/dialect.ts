/**
 * The SQL that differs between SQLite and PostgreSQL, and only that (decision 0545): the store's
 * rules take these fragments from the executor's dialect and are otherwise the same text.
 */
export interface Dialect {
  readonly name: 'sqlite' | 'postgres';
  /** The column that orders a table's rows by insertion: SQLite's `rowid`, PostgreSQL's BIGSERIAL `seq`. */
  readonly seq: string;
  /** The larger of two values: SQLite's scalar `MAX(a, b)`, PostgreSQL's `GREATEST(a, b)`. */
  readonly greatest: string;
  /**
   * Appended to a SELECT whose rows the transaction goes on to change: PostgreSQL locks them
   * (`FOR UPDATE`); SQLite needs nothing, its `BEGIN IMMEDIATE` already holds the one write lock.
   */
  readonly forUpdate: string;
  /** As `forUpdate`, skipping rows another transaction holds (a claim takes the next free job). */
  readonly forUpdateSkipLocked: string;
  /** `column` is one of a list bound as one parameter, `listParam(values)`: one statement text for any length. */
  inList(column: string): string;
  listParam(values: readonly string[]): unknown;
  /**
   * A statement that serializes the writers of one pool until the transaction ends (PostgreSQL's
   * per-board advisory lock, decision 0515), with its parameters; null on SQLite (one writer at a time).
   */
  poolLock(board: string): { sql: string; params: readonly unknown[] } | null;
}

/** First key of the two-key advisory locks of the bench store ('hilb'); the second is the board's hash. */
export const BOARD_LOCK_CLASS = 0x68696c62;

/** First key of the advisory lock that orders a pool's session waiters ('hilq'); the second is the pool's hash. */
export const QUEUE_ORDER_LOCK_CLASS = 0x68696c71;

export const sqliteDialect: Dialect = {
  name: 'sqlite',
  seq: 'rowid',
  greatest: 'MAX',
  forUpdate: '',
  forUpdateSkipLocked: '',
  inList: (column) => `${column} IN (SELECT value FROM json_each(?))`,
  listParam: (values) => JSON.stringify(values),
  poolLock: () => null,
};

export const postgresDialect: Dialect = {
  name: 'postgres',
  seq: 'seq',
  greatest: 'GREATEST',
  forUpdate: ' FOR UPDATE',
  forUpdateSkipLocked: ' FOR UPDATE SKIP LOCKED',
  inList: (column) => `${column} = ANY(?::text[])`,
  listParam: (values) => [...values],
  poolLock: (board) => ({ sql: 'SELECT pg_advisory_xact_lock(?, hashtext(?))', params: [BOARD_LOCK_CLASS, board] }),
};
