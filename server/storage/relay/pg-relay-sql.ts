import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { Statement } from '../sql-steps.js';
import { type RelayStatement, firstColumn } from './relay-sql.js';

/**
 * The one advisory lock every relay write transaction takes, on every replica: writes run one at a
 * time, so an event's seq order is its commit order and a check and the write depending on it are
 * one step (decision 0440). Not the bench's key (0353): the bench's writes never wait for the relay's.
 * Here, beside the statements, so the migrations can take it too (decision 1100).
 */
export const RELAY_WRITE_LOCK_KEY = 0x72656c79; // 'rely'

/** A lock wait that takes longer than this fails the statement instead of holding the replica's relay. */
export const LOCK_TIMEOUT_MS = 30_000;
/** A statement with no answer within this fails (its connection is dropped); a migration step may say longer. */
const STATEMENT_TIMEOUT_MS = LOCK_TIMEOUT_MS + 5_000;

/** Runs one statement of the relay's steps on a connection and answers what the steps asked for. */
export type RelayQuery = (statement: Statement) => Promise<unknown>;

/** Each statement text, numbered for PostgreSQL and named (prepared once per connection and reused). */
const prepared = new Map<string, { text: string; name: string }>();

/**
 * Runs one statement of the relay's steps on `client` (a pool, or one of its connections):
 * `?` parameters numbered `$1`, `$2`... and the statement named, so each connection prepares a
 * text once; a text that varies (`once`) is neither kept nor named. Answers as the steps asked:
 * rows, one row, the first column (`pluck`), or how many rows a write changed.
 */
export async function performRelayStatement(client: pg.Pool | pg.PoolClient, statement: RelayStatement): Promise<unknown> {
  const timeoutMs = statement.timeoutMs ?? STATEMENT_TIMEOUT_MS;
  if (statement.kind === 'script') {
    await client.query({ text: statement.sql, query_timeout: timeoutMs } as pg.QueryConfig);
    return 0;
  }
  let named = statement.once ? undefined : prepared.get(statement.sql);
  if (named === undefined) {
    named = { text: numberedParameters(statement.sql), name: `relay_${createHash('sha256').update(statement.sql).digest('hex').slice(0, 24)}` };
    if (!statement.once) prepared.set(statement.sql, named);
  }
  const config = { text: named.text, values: statement.params as unknown[], query_timeout: timeoutMs, ...(statement.once ? {} : { name: named.name }) };
  const result = await client.query(config as pg.QueryConfig);
  if (statement.kind === 'run') return result.rowCount ?? 0;
  if (statement.kind === 'one') return statement.pluck ? firstColumn(result.rows[0] as Record<string, unknown> | undefined) : result.rows[0];
  return statement.pluck ? result.rows.map((row) => firstColumn(row as Record<string, unknown>)) : result.rows;
}

/**
 * `sql` with each `?` outside quotes replaced by `$1`, `$2`, ... in order (the relay's statements
 * write `?` for parameters in both dialects; none puts one inside a quoted string, and this skips those anyway).
 */
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
