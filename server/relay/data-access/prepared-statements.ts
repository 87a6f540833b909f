import type Database from 'better-sqlite3';

/**
 * Prepared statements by SQL text, prepared on first use: preparing costs more than running the
 * relay's small queries, and the tally path runs them thousands of times per request.
 */
export class PreparedStatements {
  private readonly byText = new Map<string, Database.Statement>();

  constructor(readonly db: Database.Database) {}

  sql(text: string): Database.Statement {
    let statement = this.byText.get(text);
    if (!statement) {
      statement = this.db.prepare(text);
      this.byText.set(text, statement);
    }
    return statement;
  }

  /** `SELECT COUNT(*) AS n ...` as a number. */
  count(text: string, ...args: unknown[]): number {
    return (this.sql(text).get(...args) as { n: number }).n;
  }
}
