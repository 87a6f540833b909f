import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { pgConnection } from '../../server/storage/postgres/pg-pool.js';
import { PG_SCHEMA_VERSION, pgBenchMigrations } from '../../server/storage/bench/postgres/pg-migrations.js';
import { PostgresBenchStore } from '../../server/storage/bench/postgres/postgres-bench-store.js';
import { createTestDatabase } from '../support/postgres-test-database.js';

const drops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const drop of drops.splice(0)) await drop();
});

/** A database as an earlier hilbench left it: the first `version` steps' SQL run by hand, and its version recorded. */
async function databaseAt(version: number, rows: string): Promise<string> {
  const database = await createTestDatabase({ migrated: 'none' });
  drops.push(database.drop);
  const client = new pg.Client(pgConnection(database.url));
  await client.connect();
  try {
    for (const migration of pgBenchMigrations.slice(0, version)) {
      const step = migration.up().next();
      if (step.done) throw new Error(`migration ${migration.version} runs no script`);
      await client.query(step.value.sql);
    }
    await client.query('CREATE TABLE schema_version (version INTEGER NOT NULL)');
    await client.query('INSERT INTO schema_version (version) VALUES ($1)', [version]);
    await client.query(rows);
  } finally {
    await client.end();
  }
  return database.url;
}

/** The one migration runner on the bench's PostgreSQL schema (decision 0545): databases of earlier versions open. */
describe('the bench schema on PostgreSQL', () => {
  it('upgrades a version-2 database (before board pools) and keeps its rows, each job on its board as its instance', async () => {
    const url = await databaseAt(
      2,
      `INSERT INTO agents VALUES ('ag_1', 'one', '${'1'.repeat(64)}', 1);
       INSERT INTO jobs (job_id, agent_id, board, state, firmware_sha256, firmware_size_bytes, elf_json, uart_seconds, created_at_ms)
         VALUES ('job_1', 'ag_1', 'pico', 'done', '${'a'.repeat(64)}', 1, '{"machine":40,"machineName":"ARM","entry":0,"segments":[]}', 1, 5);
       INSERT INTO leases (board, holder_kind, holder_id, agent_id) VALUES ('uno', 'session', 'ses_1', 'ag_1');`,
    );
    const store = await PostgresBenchStore.open(url, { poolSize: 2 });
    try {
      expect(await store.getJob('job_1')).toMatchObject({ jobId: 'job_1', board: 'pico', state: 'done' });
      expect(await store.getJob('job_1')).not.toHaveProperty('instance');
      const [{ version }] = (await store.db.query<{ version: number }>('SELECT version FROM schema_version')) as [{ version: number }];
      expect(version).toBe(PG_SCHEMA_VERSION);
      expect(await store.db.query('SELECT instance, board FROM leases')).toEqual([{ instance: 'uno', board: 'uno' }]);
    } finally {
      await store.close();
    }
  });

  it('refuses a database from a newer hilbench', async () => {
    const url = await databaseAt(PG_SCHEMA_VERSION, `UPDATE schema_version SET version = ${PG_SCHEMA_VERSION + 1}`);
    await expect(PostgresBenchStore.open(url, { poolSize: 1 })).rejects.toThrow(/^the bench database has schema version \d+, newer than this hilbench understands/);
  });
});
