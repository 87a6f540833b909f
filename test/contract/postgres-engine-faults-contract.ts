import { createClock } from '@sinonjs/fake-timers';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { type Clock, clockFromFakeTimers } from '../../core/clock.js';
import { pgConnection } from '../../server/storage/postgres/pg-pool.js';
import { DatabaseUnavailableError, StorageFault, StorageFullError } from '../../server/storage/storage-faults.js';
import { until } from '../support/hilbench-processes.js';
import { createTestDatabase } from '../support/postgres-test-database.js';

/** One of the services' PostgreSQL engines (the bench's `PgDatabase`, the relay's `PgRelayEngine`), as this contract drives it. */
export interface FaultsEngine {
  /** Runs `sqls` (no parameters) in order in one transaction of the engine's. */
  transaction(sqls: readonly string[]): Promise<void>;
  /** The first column of the first row of `sql`, run as a plain statement. */
  value(sql: string): Promise<unknown>;
  /** Whether the engine takes its database for away (`GET /api/v1/health`). */
  readonly away: boolean;
  close(): Promise<void>;
}

/** Opens an engine on the database at `url`, its reconnect backoff on `clock`. */
export type OpenFaultsEngine = (url: string, clock: Clock) => Promise<FaultsEngine>;

/** The test's lock ('gate'): a statement that asks for it waits, inside its transaction, until the test lets it go. */
const GATE_KEY = 0x67617465;

/**
 * The faults contract of both services' PostgreSQL engines (decisions 0516, 0517, 0790): what the
 * shared fault guard and checked-out connection promise, shown on each engine that uses them, so
 * an engine that stopped using them (or handled one fault its own way) fails here.
 */
export function describePostgresEngineFaultsContract(name: string, open: OpenFaultsEngine): void {
  describe(`PostgreSQL engine faults contract: ${name}`, () => {
    async function setUp() {
      const database = await createTestDatabase();
      const admin = new pg.Client(pgConnection(database.url));
      await admin.connect();
      await admin.query('CREATE TABLE public.fault_probe (n INTEGER NOT NULL)');
      const fake = createClock(0);
      const engine = await open(database.url, clockFromFakeTimers(fake));
      return {
        admin,
        fake,
        engine,
        count: async () => Number(await engine.value('SELECT COUNT(*) FROM public.fault_probe')),
        dispose: async () => {
          await engine.close();
          await admin.end();
          await database.drop();
        },
      };
    }

    it('fails a transaction whose connection is cut as the database away, commits none of it, lives on, and serves again after the backoff on a new connection', async () => {
      const { admin, fake, engine, count, dispose } = await setUp();
      try {
        await admin.query('SELECT pg_advisory_lock($1)', [GATE_KEY]);
        // Its failure is taken as soon as it comes (it may come before the terminating statement's answer).
        const cut = engine.transaction(['INSERT INTO public.fault_probe (n) VALUES (1)', `SELECT pg_advisory_xact_lock(${GATE_KEY})`, 'INSERT INTO public.fault_probe (n) VALUES (2)']).then(
          () => 'committed',
          (err: unknown) => err,
        );
        let pid: number | undefined;
        await until('the transaction to wait at the gate', async () => {
          const { rows } = await admin.query<{ pid: number }>("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted", [GATE_KEY]);
          pid = rows[0]?.pid;
          return pid !== undefined;
        }, 10_000);
        await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        expect(await cut).toBeInstanceOf(DatabaseUnavailableError);
        expect(engine.away).toBe(true);
        // Until the next try (250 ms on the engine's clock), a request fails at once, sending nothing.
        await expect(engine.value('SELECT 1')).rejects.toThrow(/trying again in 250 ms/);
        fake.tick(250);
        expect(await count(), 'nothing of the cut transaction committed').toBe(0);
        expect(engine.away).toBe(false);
        await admin.query('SELECT pg_advisory_unlock($1)', [GATE_KEY]);
        await engine.transaction(['INSERT INTO public.fault_probe (n) VALUES (3)', `SELECT pg_advisory_xact_lock(${GATE_KEY})`]);
        expect(await count()).toBe(1);
        const { rows } = await admin.query<{ n: string }>('SELECT COUNT(*) AS n FROM pg_stat_activity WHERE pid = $1', [pid]);
        expect(Number(rows[0]?.n), 'the cut connection is gone, not handed out again').toBe(0);
      } finally {
        await dispose();
      }
    });

    it("answers the database's full disk (53100) as storage full, not as the database away, and goes on serving", async () => {
      const { engine, count, dispose } = await setUp();
      try {
        const full = engine.transaction(['INSERT INTO public.fault_probe (n) VALUES (1)', "DO $$ BEGIN RAISE EXCEPTION 'could not extend file' USING ERRCODE = 'disk_full'; END $$"]);
        await expect(full).rejects.toBeInstanceOf(StorageFullError);
        await expect(full).rejects.toThrow(/its disk is full \(could not extend file\)/);
        expect(engine.away).toBe(false);
        expect(await count(), 'the refused transaction changed nothing').toBe(0);
        await expect(engine.value("DO $$ BEGIN RAISE EXCEPTION 'no space' USING ERRCODE = 'disk_full'; END $$")).rejects.toBeInstanceOf(StorageFullError);
      } finally {
        await dispose();
      }
    });

    it('passes any other error on unchanged, rolled back, and stays ready', async () => {
      const { engine, count, dispose } = await setUp();
      try {
        const refused = engine.transaction(['INSERT INTO public.fault_probe (n) VALUES (1)', 'INSERT INTO public.fault_probe (n) VALUES (NULL)']);
        await expect(refused).rejects.toMatchObject({ code: '23502' });
        await expect(refused).rejects.not.toBeInstanceOf(StorageFault);
        expect(engine.away).toBe(false);
        expect(await count()).toBe(0);
      } finally {
        await dispose();
      }
    });
  });
}
