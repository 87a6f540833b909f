import type Database from 'better-sqlite3';
import { sqliteDialect } from './dialect.js';
import type { SqlExecutor } from './sql-executor.js';
import { runStepsSync, type Statement, type Steps } from '../../sql-steps.js';
import { sqliteStatements } from '../../sqlite-statements.js';

/**
 * The store's rules on SQLite (better-sqlite3): every statement runs synchronously, so a rule's
 * steps run from start to end without giving the event loop away, and a write is one
 * `BEGIN IMMEDIATE` transaction (the write lock first: the check and the change are one step for
 * every writer of the file, other processes included).
 */
export class SqliteExecutor implements SqlExecutor {
  readonly dialect = sqliteDialect;
  readonly counters = { statements: 0, transactions: 0 };
  private readonly statements: ReturnType<typeof sqliteStatements>;

  /** `afterWrite`: called after each `plain` call and each committed transaction (the WAL checkpointer's `noteCommit`, decision 0760). */
  constructor(
    private readonly db: Database.Database,
    private readonly hooks: { afterWrite?: () => void } = {},
  ) {
    this.statements = sqliteStatements(db);
  }

  async plain<T>(steps: () => Steps<T>): Promise<T> {
    const result = runStepsSync(steps(), this.execute);
    this.hooks.afterWrite?.();
    return result;
  }

  async transaction<T>(steps: () => Steps<T>): Promise<T> {
    this.counters.transactions++;
    // A statement after the one a rule called its last is refused here as on PostgreSQL (where that
    // one's COMMIT has gone out with it), so both databases' contract suites catch such a rule.
    let ended = false;
    const execute = (statement: Statement): unknown => {
      if (ended) throw new Error(`a statement after the last one of its transaction: ${statement.sql}`);
      ended = statement.last === true;
      return this.execute(statement);
    };
    const result = this.db.transaction(() => runStepsSync(steps(), execute)).immediate();
    this.hooks.afterWrite?.();
    return result;
  }

  private readonly execute = (statement: Statement): unknown => {
    this.counters.statements++;
    return this.statements.execute(statement);
  };

  async close(): Promise<void> {
    this.statements.forget();
    if (this.db.open) this.db.close();
  }
}
