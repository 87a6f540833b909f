import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PgDatabase } from '../../server/storage/bench/postgres/pg-database.js';
import { withCheckedOutClient } from '../../server/storage/postgres/pg-faults.js';
import { openPgPool, pgConnection } from '../../server/storage/postgres/pg-pool.js';
import { PgRelayEngine } from '../../server/storage/relay/pg-relay-engine.js';
import type { RelayStatement } from '../../server/storage/relay/relay-sql.js';
import type { Steps } from '../../server/storage/sql-steps.js';
import { createTestDatabase } from '../support/postgres-test-database.js';
import { describePostgresEngineFaultsContract } from './postgres-engine-faults-contract.js';

// The same faults contract on both services' PostgreSQL engines (decision 0790).
describePostgresEngineFaultsContract('bench (PgDatabase)', async (url, clock) => {
  const db = new PgDatabase(url, { poolSize: 2, clock });
  return {
    transaction: (sqls) =>
      db.write(async (q) => {
        for (const sql of sqls) await q(sql);
      }),
    value: async (sql) => Object.values((await db.query(sql))[0] ?? {})[0],
    get away() {
      return db.away;
    },
    close: () => db.close(),
  };
});

describePostgresEngineFaultsContract('relay (PgRelayEngine)', async (url, clock) => {
  const engine = await PgRelayEngine.open(url, () => undefined, { poolSize: 2, clock });
  return {
    transaction: (sqls) =>
      engine.tx(function* (): Steps<void> {
        for (const sql of sqls) yield { kind: 'run', sql, params: [] };
      }),
    value: (sql) =>
      engine.plain(function* (): Steps<unknown> {
        const statement: RelayStatement = { kind: 'one', sql, params: [], pluck: true };
        return yield statement;
      }),
    get away() {
      return engine.away;
    },
    close: () => engine.close(),
  };
});

describe('a connection checked out of the pool (withCheckedOutClient, both engines)', () => {
  it('outlives its connection ending between two statements: the next statement fails with the loss unsent, and the connection is dropped', async () => {
    const database = await createTestDatabase();
    const pool = openPgPool(database.url, { poolSize: 1, what: 'the test pool' });
    const admin = new pg.Client(pgConnection(database.url));
    await admin.connect();
    try {
      let sentAfterLoss = false;
      const outcome = withCheckedOutClient(pool, async (connection) => {
        let client: pg.PoolClient | undefined;
        const pid = await connection.send(async (c) => {
          client = c;
          return (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        });
        // The server ends the idle, checked-out connection (57P01, as at a restart): an `error`
        // event nobody but the helper listens to would end this process.
        // (Not events.once: it rejects on the `error` event, which comes first.)
        const ended = new Promise<void>((resolve) => client!.once('end', () => resolve()));
        await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        await ended;
        expect(connection.lost).toBeInstanceOf(Error);
        await connection.send(async (c) => {
          sentAfterLoss = true;
          return c.query('SELECT 1');
        });
      });
      await expect(outcome).rejects.toThrow(/terminating connection|Connection terminated/);
      expect(sentAfterLoss, 'nothing is sent on a lost connection').toBe(false);
      expect(pool.totalCount, 'the lost connection left the pool').toBe(0);
      // The pool opens a new connection for the next caller.
      expect(await withCheckedOutClient(pool, (connection) => connection.send(async (c) => (await c.query('SELECT 1 AS one')).rows[0]))).toEqual({ one: 1 });
    } finally {
      await admin.end();
      await pool.end();
      await database.drop();
    }
  });
});
