/**
 * How the relay's repositories run SQL, on either store (decision 0440). Synchronous on both:
 * the relay's domain code (tallies, slice book, statement log) reads the database in tight loops
 * and keeps its commit order by never yielding inside a transaction. `?` marks parameters; a
 * statement that differs between the dialects is chosen by `dialect` in the repository.
 */
export interface RelaySql {
  readonly dialect: 'sqlite' | 'postgres';
  /** Runs a write; returns how many rows it changed. */
  run(sql: string, ...args: unknown[]): number;
  /** The first row, or undefined. */
  get<T>(sql: string, ...args: unknown[]): T | undefined;
  all<T>(sql: string, ...args: unknown[]): T[];
  /** The first column of the first row, or undefined. */
  value<T>(sql: string, ...args: unknown[]): T | undefined;
  /** The first column of every row. */
  values<T>(sql: string, ...args: unknown[]): T[];
  /** `all` for a statement whose text varies (not worth keeping prepared). */
  allOnce<T>(sql: string, ...args: unknown[]): T[];
  /** `SELECT COUNT(*) AS n ...` as a number. */
  count(sql: string, ...args: unknown[]): number;
}

/** The case-insensitive LIKE of the dialect: SQLite's LIKE ignores ASCII case, PostgreSQL's LIKE does not. */
export function likeOf(q: RelaySql): 'LIKE' | 'ILIKE' {
  return q.dialect === 'postgres' ? 'ILIKE' : 'LIKE';
}
