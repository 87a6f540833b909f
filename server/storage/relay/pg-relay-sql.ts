import { runStepsSync, type Steps } from '../sql-steps.js';
import type { PgSyncConnection } from './pg-sync-connection.js';
import { type RelayStatement, firstColumn } from './relay-sql.js';

/**
 * The relay's steps on PostgreSQL, over one synchronous connection (decision 0440). The
 * repositories' `?` parameters become `$1`, `$2`... (once per SQL text); no repository puts a `?`
 * inside a quoted string, and this conversion skips those anyway.
 */
export class PgRelaySteps {
  private readonly converted = new Map<string, string>();

  constructor(readonly connection: PgSyncConnection) {}

  /** Runs `steps` to their end, now. */
  run<T>(steps: Steps<T>): T {
    return runStepsSync(steps, this.execute);
  }

  private readonly execute = (statement: RelayStatement): unknown => {
    if (statement.kind === 'script') {
      this.connection.query(statement.sql);
      return 0;
    }
    const result = this.connection.query(this.text(statement.sql, !statement.once), statement.params);
    if (statement.kind === 'run') return result.rowCount;
    if (statement.kind === 'one') return statement.pluck ? firstColumn(result.rows[0]) : result.rows[0];
    return statement.pluck ? result.rows.map(firstColumn) : result.rows;
  };

  private text(sql: string, remember: boolean): string {
    let text = this.converted.get(sql);
    if (text === undefined) {
      text = numberedParameters(sql);
      if (remember) this.converted.set(sql, text);
    }
    return text;
  }
}

/** `sql` with each `?` outside quotes replaced by `$1`, `$2`, ... in order. */
export function numberedParameters(sql: string): string {
  let out = '';
  let n = 0;
  let quote: string | null = null;
  for (const ch of sql) {
    if (quote) {
      if (ch === quote) quote = null;
      out += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      out += ch;
    } else if (ch === '?') {
      out += `$${++n}`;
    } else {
      out += ch;
    }
  }
  return out;
}
