import type { Statement, Steps } from '../sql-steps.js';

/** A statement of the relay's rules; `once`: its text varies, so the executor does not keep it prepared. */
export interface RelayStatement extends Statement {
  readonly once?: boolean;
  /**
   * Answer the first column instead of rows (`one`: its value or undefined; `all`: a list of them).
   * SQLite runs it as a plucked statement (better-sqlite3's `pluck`), which builds no row object:
   * the vote path reads most of its lookups this way.
   */
  readonly pluck?: boolean;
}

/**
 * How the relay's repositories ask for SQL, on either database (decisions 0440, 0610): each method
 * is a step (`yield* q.get(...)`) that a dialect's executor answers (server/storage/relay/
 * sqlite-relay-executor.ts, pg-relay-sql.ts), synchronously on SQLite and awaited on a pooled connection on PostgreSQL. `?` marks
 * parameters; a statement that differs between the dialects is chosen by `dialect` in the repository.
 */
export class RelaySql {
  constructor(readonly dialect: 'sqlite' | 'postgres') {}

  /** Runs a write; returns how many rows it changed. */
  *run(sql: string, ...args: unknown[]): Steps<number> {
    return (yield { kind: 'run', sql, params: args }) as number;
  }

  /** The first row, or undefined. */
  *get<T>(sql: string, ...args: unknown[]): Steps<T | undefined> {
    return (yield { kind: 'one', sql, params: args }) as T | undefined;
  }

  *all<T>(sql: string, ...args: unknown[]): Steps<T[]> {
    return (yield { kind: 'all', sql, params: args }) as T[];
  }

  /** The first column of the first row, or undefined. */
  *value<T>(sql: string, ...args: unknown[]): Steps<T | undefined> {
    const statement: RelayStatement = { kind: 'one', sql, params: args, pluck: true };
    return (yield statement) as T | undefined;
  }

  /** The first column of every row. */
  *values<T>(sql: string, ...args: unknown[]): Steps<T[]> {
    const statement: RelayStatement = { kind: 'all', sql, params: args, pluck: true };
    return (yield statement) as T[];
  }

  /** `all` for a statement whose text varies (not worth keeping prepared). */
  *allOnce<T>(sql: string, ...args: unknown[]): Steps<T[]> {
    const statement: RelayStatement = { kind: 'all', sql, params: args, once: true };
    return (yield statement) as T[];
  }

  /** `SELECT COUNT(*) AS n ...` as a number. */
  *count(sql: string, ...args: unknown[]): Steps<number> {
    const statement: RelayStatement = { kind: 'one', sql, params: args, pluck: true };
    return Number((yield statement) as number | string);
  }
}

/** The first column of `row` (a plucked statement's answer where the driver cannot pluck), or undefined. */
export function firstColumn(row: Record<string, unknown> | undefined): unknown {
  if (row === undefined) return undefined;
  for (const key in row) return row[key];
  return undefined;
}

/** The case-insensitive LIKE of the dialect: SQLite's LIKE ignores ASCII case, PostgreSQL's LIKE does not. */
export function likeOf(q: { readonly dialect: 'sqlite' | 'postgres' }): 'LIKE' | 'ILIKE' {
  return q.dialect === 'postgres' ? 'ILIKE' : 'LIKE';
}

/** `RelaySql` with each statement run on its own (`RelayStore.plainSql`): checks at start, tests, benchmarks. */
export interface PlainRelaySql {
  readonly dialect: 'sqlite' | 'postgres';
  run(sql: string, ...args: unknown[]): Promise<number>;
  get<T>(sql: string, ...args: unknown[]): Promise<T | undefined>;
  all<T>(sql: string, ...args: unknown[]): Promise<T[]>;
  value<T>(sql: string, ...args: unknown[]): Promise<T | undefined>;
  values<T>(sql: string, ...args: unknown[]): Promise<T[]>;
  allOnce<T>(sql: string, ...args: unknown[]): Promise<T[]>;
  count(sql: string, ...args: unknown[]): Promise<number>;
}
