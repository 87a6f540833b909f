import type Database from 'better-sqlite3';
import { runStepsSync, type Steps } from '../sql-steps.js';
import type { RelayStatement } from './relay-sql.js';

/**
 * The relay's steps on SQLite (decision 0610): every statement runs synchronously, so a rule runs
 * from its first statement to its last without giving the event loop away, as the bench's SQLite
 * executor does (decision 0545). Statements are prepared once per text and kept (preparing costs
 * more than running the relay's small queries, and the tally path runs them thousands of times per
 * request), except those whose text varies (`once`).
 */
export class SqliteRelayExecutor {
  private readonly prepared = new Map<string, Database.Statement>();
  /** Plucked statements (`RelayStatement.pluck`), by SQL text: a statement is either plucked or not for good. */
  private readonly plucked = new Map<string, Database.Statement>();

  /**
   * `onAutocommitWrite` is told of a statement that wrote outside a transaction (it committed on
   * its own), so the store makes it durable like a transaction's commit (decision 0480).
   */
  constructor(
    private readonly db: Database.Database,
    private readonly onAutocommitWrite: () => void,
  ) {}

  /** Runs `steps` to their end, now. */
  run<T>(steps: Steps<T>): T {
    return runStepsSync(steps, this.execute);
  }

  private readonly execute = (statement: RelayStatement): unknown => {
    if (statement.kind === 'script') {
      this.db.exec(statement.sql);
      return 0;
    }
    const cache = statement.pluck ? this.plucked : this.prepared;
    let ready = statement.once ? undefined : cache.get(statement.sql);
    if (ready === undefined) {
      ready = this.db.prepare(statement.sql);
      if (statement.pluck) ready.pluck();
      if (!statement.once) cache.set(statement.sql, ready);
    }
    const answer = statement.kind === 'run' ? ready.run(...statement.params).changes : statement.kind === 'one' ? ready.get(...statement.params) : ready.all(...statement.params);
    if (!ready.readonly && !this.db.inTransaction) this.onAutocommitWrite();
    return answer;
  };
}
