import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { pgConnection } from '../../server/storage/postgres/pg-pool.js';
import { PG_SCHEMA_VERSION } from '../../server/storage/bench/postgres/pg-migrations.js';
import { pgRelayMigrations } from '../../server/storage/relay/pg-relay-migrations.js';
import { createTestDatabase, testDatabaseBaseUrl } from './postgres-test-database.js';
import { ensureTemplate, migratedTemplate, templateName } from './postgres-template.js';

/** The migrated templates test databases are copied from (decision 0830). */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client(pgConnection(testDatabaseBaseUrl));
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const rows = <T extends pg.QueryResultRow>(sql: string, params: unknown[] = []) => admin(async (c) => (await c.query<T>(sql, params)).rows);

/** Drops `name` even when it is a template, once the test is done. */
function dropLater(name: string): void {
  cleanups.push(() =>
    admin(async (c) => {
      if ((await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 0) return;
      await c.query(`ALTER DATABASE ${name} WITH IS_TEMPLATE false`);
      await c.query(`DROP DATABASE ${name} WITH (FORCE)`);
    }),
  );
}

/**
 * A template name of one test's own, in a family of its own (the name up to its last `_`), so that
 * its build never drops the shared templates as stale. The shared relay family's prefix
 * (`hilbench_template_relay_`) does cover it, so a shared build would drop one a day old; this
 * test drops its own long before that.
 */
const ownTemplateName = (tables: 'bench' | 'relay') => `hilbench_template_${tables}_t${randomBytes(6).toString('hex')}_own`;

/** A database copied from `template`, its tables by schema and its recorded versions. */
async function contentsOf(template: string): Promise<{ tables: string[]; versions: Record<string, number> }> {
  const name = `hilbench_test_${randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
  dropLater(name);
  const url = new URL(testDatabaseBaseUrl);
  url.pathname = `/${name}`;
  const client = new pg.Client(pgConnection(url.toString()));
  await client.connect();
  try {
    const tables = (await client.query<{ t: string }>("SELECT table_schema || '.' || table_name AS t FROM information_schema.tables WHERE table_schema IN ('public', 'relay') ORDER BY 1")).rows.map((r) => r.t);
    const versions: Record<string, number> = {};
    for (const table of ['public.schema_version', 'relay.schema_version'].filter((t) => tables.includes(t))) {
      versions[table] = (await client.query<{ version: number }>(`SELECT version FROM ${table}`)).rows[0]!.version;
    }
    return { tables, versions };
  } finally {
    await client.end();
  }
}

describe('migrated templates for test databases', () => {
  it('hold the tables asked for at the latest version, and a database copied from one opens as migrated', async () => {
    const both = await contentsOf(await migratedTemplate(testDatabaseBaseUrl, 'both'));
    expect(both.versions).toEqual({ 'public.schema_version': PG_SCHEMA_VERSION, 'relay.schema_version': pgRelayMigrations.length });
    expect(both.tables).toEqual(expect.arrayContaining(['public.jobs', 'public.debug_armings', 'relay.items', 'relay.write_generation']));
    const bench = await contentsOf(await migratedTemplate(testDatabaseBaseUrl, 'bench'));
    expect(bench.versions).toEqual({ 'public.schema_version': PG_SCHEMA_VERSION });
    expect(bench.tables.filter((t) => t.startsWith('relay.'))).toEqual([]);
    const relay = await contentsOf(await migratedTemplate(testDatabaseBaseUrl, 'relay'));
    expect(relay.versions).toEqual({ 'relay.schema_version': pgRelayMigrations.length });
    expect(relay.tables.filter((t) => t.startsWith('public.'))).toEqual([]);
    // Nobody connects to a template: a connection would stop every copy of it.
    const [flags] = await rows<{ datistemplate: boolean; datallowconn: boolean }>('SELECT datistemplate, datallowconn FROM pg_database WHERE datname = $1', [templateName('both')]);
    expect(flags).toEqual({ datistemplate: true, datallowconn: false });
  });

  it('are named by their migrations: each set of tables its own name, the same one every time', () => {
    expect(new Set([templateName('bench'), templateName('relay'), templateName('both')]).size).toBe(3);
    expect(templateName('bench')).toBe(templateName('bench'));
    expect(templateName('bench')).toMatch(/^hilbench_template_bench_[0-9a-f]{16}$/);
  });

  it('is built once by processes asking at the same time, and again where a build died half way', async () => {
    const name = ownTemplateName('relay');
    dropLater(name);
    // A build that died after CREATE DATABASE: the database is there, not marked a template, with a stray table.
    await admin((c) => c.query(`CREATE DATABASE ${name}`));
    const url = new URL(testDatabaseBaseUrl);
    url.pathname = `/${name}`;
    const half = new pg.Client(pgConnection(url.toString()));
    await half.connect();
    await half.query('CREATE TABLE half_built (x INTEGER)');
    await half.end();
    // Separate connections, as separate test processes have: they take turns on the advisory lock.
    expect(await Promise.all([1, 2, 3].map(() => ensureTemplate(testDatabaseBaseUrl, name, 'relay')))).toEqual([name, name, name]);
    const contents = await contentsOf(name);
    expect(contents.tables).not.toContain('public.half_built');
    expect(contents.versions).toEqual({ 'relay.schema_version': pgRelayMigrations.length });
  });

  it('drops a template of other migrations built over a day ago, and keeps a recent one (another checkout may be using it)', async () => {
    const suffix = randomBytes(6).toString('hex');
    // A family of their own (the name up to its last `_`), so the real bench template is never touched.
    const [stale, recent, current] = ['s', 'r', 'c'].map((k) => `hilbench_template_bench_x${suffix}_${k}`) as [string, string, string];
    for (const name of [stale, recent, current]) dropLater(name);
    await admin(async (c) => {
      for (const [name, ageMs] of [
        [stale, 25 * 3_600_000],
        [recent, 3_600_000],
      ] as const) {
        await c.query(`CREATE DATABASE ${name}`);
        await c.query(`COMMENT ON DATABASE ${name} IS 'built_at_ms=${Date.now() - ageMs}'`);
        await c.query(`ALTER DATABASE ${name} WITH IS_TEMPLATE true`);
      }
    });
    await ensureTemplate(testDatabaseBaseUrl, current, 'bench');
    const left = await rows<{ datname: string }>('SELECT datname FROM pg_database WHERE datname = ANY($1) ORDER BY datname', [[stale, recent, current]]);
    expect(left.map((r) => r.datname)).toEqual([current, recent].sort());
  });

  it('builds its template again when it was dropped after this process found it', async () => {
    // A template of this test's own: dropping the shared one would fail the copy of any other
    // worker caught mid-drop.
    const name = ownTemplateName('relay');
    dropLater(name);
    const template = await migratedTemplate(testDatabaseBaseUrl, 'relay', { name });
    expect(template).toBe(name);
    await admin(async (c) => {
      await c.query(`ALTER DATABASE ${template} WITH IS_TEMPLATE false`);
      await c.query(`DROP DATABASE ${template} WITH (FORCE)`);
    });
    const database = await createTestDatabase({ migrated: 'relay', templateName: name });
    cleanups.push(database.drop);
    expect(await rows('SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate', [template])).toHaveLength(1);
    expect((await contentsOf(template)).versions).toEqual({ 'relay.schema_version': pgRelayMigrations.length });
  });
});
