import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/support/postgres-test-database.js';
import { all, run } from '../../sql-steps.js';
import { PgDatabase } from '../postgres/pg-database.js';
import { PgExecutor } from '../postgres/pg-executor.js';
import type { SqlExecutor } from './sql-executor.js';
import { SqliteExecutor } from './sqlite-executor.js';

const TABLE = 'CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER NOT NULL CHECK (n >= 0))';

/** An executor of each dialect on a table `t`, with a close. */
const executors: Array<[string, () => Promise<{ executor: SqlExecutor; close: () => Promise<void> }>]> = [
  [
    'sqlite',
    async () => {
      const db = new Database(':memory:');
      db.exec(TABLE);
      const executor = new SqliteExecutor(db);
      return { executor, close: () => executor.close() };
    },
  ],
  [
    'postgres',
    async () => {
      const database = await createTestDatabase({ migrated: 'none' });
      // One connection: the test after a failed last statement checks that very connection is good again.
      const executor = new PgExecutor(new PgDatabase(database.url, { poolSize: 1 }));
      await executor.plain(() => run(TABLE));
      return {
        executor,
        close: async () => {
          await executor.close();
          await database.drop();
        },
      };
    },
  ],
];

/**
 * A transaction's statement a rule calls its last (`run(..., { last: true })`, decision 0980): on
 * PostgreSQL its COMMIT goes out behind it. Whether it commits or fails, the transaction is whole,
 * as without it; a rule that asks for more after it is refused on both databases.
 */
describe.each(executors)('the last statement of a transaction: %s', (name, open) => {
  const opened: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of opened.splice(0)) await close();
  });
  const fresh = async () => {
    const { executor, close } = await open();
    opened.push(close);
    return executor;
  };
  const rows = (executor: SqlExecutor) => executor.plain(() => all<{ k: string; n: number }>('SELECT k, n FROM t ORDER BY k'));

  it('commits the statements before it and its own, and answers its rows changed', async () => {
    const executor = await fresh();
    const changed = await executor.transaction(function* () {
      yield* run('INSERT INTO t (k, n) VALUES (?, ?)', ['a', 1]);
      return yield* run('INSERT INTO t (k, n) VALUES (?, ?)', ['b', 2], { last: true });
    });
    expect(changed).toBe(1);
    expect((await rows(executor)).map((r) => [r.k, Number(r.n)])).toEqual([
      ['a', 1],
      ['b', 2],
    ]);
  });

  it('rolls back the statements before it when it fails, and throws its error', async () => {
    const executor = await fresh();
    await expect(
      executor.transaction(function* () {
        yield* run('INSERT INTO t (k, n) VALUES (?, ?)', ['a', 1]);
        // The CHECK refuses it: no race the executor would run again.
        yield* run('INSERT INTO t (k, n) VALUES (?, ?)', ['b', -1], { last: true });
      }),
    ).rejects.toThrow(/check/i);
    expect(await rows(executor)).toEqual([]);
    // The connection is good for the next transaction.
    await executor.transaction(() => run('INSERT INTO t (k, n) VALUES (?, ?)', ['c', 3], { last: true }));
    expect((await rows(executor)).map((r) => r.k)).toEqual(['c']);
  });

  it('refuses a statement a rule asks for after its last one', async () => {
    const executor = await fresh();
    await expect(
      executor.transaction(function* () {
        yield* run('INSERT INTO t (k, n) VALUES (?, ?)', ['a', 1], { last: true });
        yield* run('INSERT INTO t (k, n) VALUES (?, ?)', ['b', 2]);
      }),
    ).rejects.toThrow('a statement after the last one of its transaction');
    // PostgreSQL committed with the last statement (its COMMIT went behind it); SQLite refuses the
    // next one inside the open transaction and rolls it back. Either way the rule is at fault.
    expect((await rows(executor)).map((r) => r.k)).toEqual(name === 'postgres' ? ['a'] : []);
  });
});
