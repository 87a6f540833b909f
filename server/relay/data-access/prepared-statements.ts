import type Database from 'better-sqlite3';
import type { RelaySql } from './relay-sql.js';

/**
 * The relay's SQL on SQLite: prepared statements by SQL text, prepared on first use: preparing
 * costs more than running the relay's small queries, and the tally path runs them thousands of
 * times per request.
 */
export class PreparedStatements implements RelaySql {
  readonly dialect = 'sqlite' as const;
  private readonly byText = new Map<string, Database.Statement>();
  /** Statements that return their first column (better-sqlite3's `pluck`), by SQL text. */
  private readonly plucked = new Map<string, Database.Statement>();

  constructor(readonly db: Database.Database) {}

  private sql(text: string): Database.Statement {
    let statement = this.byText.get(text);
    if (!statement) {
      statement = this.db.prepare(text);
      this.byText.set(text, statement);
    }
    return statement;
  }

  private pluck(text: string): Database.Statement {
    let statement = this.plucked.get(text);
    if (!statement) {
      statement = this.db.prepare(text).pluck();
      this.plucked.set(text, statement);
    }
    return statement;
  }

  run(text: string, ...args: unknown[]): number {
    return this.sql(text).run(...args).changes;
  }

  get<T>(text: string, ...args: unknown[]): T | undefined {
    return this.sql(text).get(...args) as T | undefined;
  }

  all<T>(text: string, ...args: unknown[]): T[] {
    return this.sql(text).all(...args) as T[];
  }

  value<T>(text: string, ...args: unknown[]): T | undefined {
    return this.pluck(text).get(...args) as T | undefined;
  }

  values<T>(text: string, ...args: unknown[]): T[] {
    return this.pluck(text).all(...args) as T[];
  }

  allOnce<T>(text: string, ...args: unknown[]): T[] {
    return this.db.prepare(text).all(...args) as T[];
  }

  count(text: string, ...args: unknown[]): number {
    return (this.sql(text).get(...args) as { n: number }).n;
  }
}
