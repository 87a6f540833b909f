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

  /**
   * `onAutocommitWrite` is told of a statement that wrote outside a transaction (it committed on
   * its own), so the store makes it durable like a transaction's commit (decision 0480).
   */
  constructor(
    readonly db: Database.Database,
    private readonly onAutocommitWrite: () => void = () => {},
  ) {}

  /** Call after running `statement`: a write outside a transaction is reported as a commit. */
  private ran(statement: Database.Statement): void {
    if (!statement.readonly && !this.db.inTransaction) this.onAutocommitWrite();
  }

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
    const statement = this.sql(text);
    const result = statement.run(...args).changes;
    this.ran(statement);
    return result;
  }

  get<T>(text: string, ...args: unknown[]): T | undefined {
    const statement = this.sql(text);
    const result = statement.get(...args) as T | undefined;
    this.ran(statement);
    return result;
  }

  all<T>(text: string, ...args: unknown[]): T[] {
    const statement = this.sql(text);
    const result = statement.all(...args) as T[];
    this.ran(statement);
    return result;
  }

  value<T>(text: string, ...args: unknown[]): T | undefined {
    const statement = this.pluck(text);
    const result = statement.get(...args) as T | undefined;
    this.ran(statement);
    return result;
  }

  values<T>(text: string, ...args: unknown[]): T[] {
    const statement = this.pluck(text);
    const result = statement.all(...args) as T[];
    this.ran(statement);
    return result;
  }

  allOnce<T>(text: string, ...args: unknown[]): T[] {
    const statement = this.db.prepare(text);
    const result = statement.all(...args) as T[];
    this.ran(statement);
    return result;
  }

  count(text: string, ...args: unknown[]): number {
    const statement = this.sql(text);
    const result = (statement.get(...args) as { n: number }).n;
    this.ran(statement);
    return result;
  }
}
