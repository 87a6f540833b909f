import type { PgSyncConnection } from './pg-sync-connection.js';
import type { RelaySql } from './relay-sql.js';

/**
 * The relay's SQL on PostgreSQL, over one synchronous connection. The repositories' `?`
 * parameters become `$1`, `$2`... (once per SQL text); no repository puts a `?` inside a quoted
 * string, and this conversion skips those anyway.
 */
export class PgRelaySql implements RelaySql {
  readonly dialect = 'postgres' as const;
  private readonly converted = new Map<string, string>();

  constructor(readonly connection: PgSyncConnection) {}

  private text(sql: string, remember = true): string {
    let text = this.converted.get(sql);
    if (text === undefined) {
      text = numberedParameters(sql);
      if (remember) this.converted.set(sql, text);
    }
    return text;
  }

  run(sql: string, ...args: unknown[]): number {
    return this.connection.query(this.text(sql), args).rowCount;
  }

  get<T>(sql: string, ...args: unknown[]): T | undefined {
    return this.connection.query(this.text(sql), args).rows[0] as T | undefined;
  }

  all<T>(sql: string, ...args: unknown[]): T[] {
    return this.connection.query(this.text(sql), args).rows as T[];
  }

  value<T>(sql: string, ...args: unknown[]): T | undefined {
    const row = this.connection.query(this.text(sql), args).rows[0];
    return row === undefined ? undefined : (Object.values(row)[0] as T);
  }

  values<T>(sql: string, ...args: unknown[]): T[] {
    return this.connection.query(this.text(sql), args).rows.map((row) => Object.values(row)[0] as T);
  }

  allOnce<T>(sql: string, ...args: unknown[]): T[] {
    return this.connection.query(this.text(sql, false), args).rows as T[];
  }

  count(sql: string, ...args: unknown[]): number {
    return Number((this.connection.query(this.text(sql), args).rows[0] as { n: number | string }).n);
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
