import { postgresDialect } from '../sql/dialect.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { numberPlaceholders, runSteps, type Statement, type Steps } from '../../sql-steps.js';
import type { PgDatabase, RawQuery } from './pg-database.js';

async function perform(q: RawQuery, statement: Statement): Promise<unknown> {
  // Scripts (several statements, transaction control) are the migration runner's, on a connection of its own.
  if (statement.kind === 'script') throw new Error('a script runs only in a migration (server/storage/run-migrations.ts)');
  const result = await q(numberPlaceholders(statement.sql), statement.params, statement.last ? { last: true } : undefined);
  if (statement.kind === 'run') return result.rowCount;
  if (statement.kind === 'one') return result.rows[0];
  return result.rows;
}

/**
 * The store's rules on PostgreSQL: each statement a named (prepared once per connection) query on
 * a connection of the pool (`PgDatabase`, sized by `--database-pool-size`); a write is one
 * transaction on one connection, run again when it lost a race, with the database's faults
 * answered as decision 0516 says. Nothing here blocks the event loop.
 */
export class PgExecutor implements SqlExecutor {
  readonly dialect = postgresDialect;

  constructor(readonly db: PgDatabase) {}

  get counters(): { statements: number; transactions: number } {
    return this.db.counters;
  }

  plain<T>(steps: () => Steps<T>): Promise<T> {
    return runSteps(steps(), (statement) => perform(this.db.rawQuery, statement));
  }

  transaction<T>(steps: () => Steps<T>): Promise<T> {
    return this.db.writeRaw((q) => runSteps(steps(), (statement) => perform(q, statement)));
  }

  close(): Promise<void> {
    return this.db.close();
  }
}
