import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Migration } from '../../server/storage/run-migrations.js';
import { pgConnection } from '../../server/storage/postgres/pg-pool.js';
import { pgBenchMigrations } from '../../server/storage/bench/postgres/pg-migrations.js';
import { PostgresBenchStore } from '../../server/storage/bench/postgres/postgres-bench-store.js';
import { PgRelayEngine } from '../../server/storage/relay/pg-relay-engine.js';
import { pgRelayMigrations } from '../../server/storage/relay/pg-relay-migrations.js';

/**
 * Migrated template databases (decision 0830): a test database made with `CREATE DATABASE x
 * TEMPLATE t` starts with the bench's tables, the relay's or both already at the latest version,
 * instead of running every migration again (a second or more a database on a loaded 2-core
 * machine, hundreds of databases a run). A template is built by the real migrations, through the
 * stores' own openers, the first time a test process needs it. One per set of tables, as copying
 * costs about as much per relation as creating it: a bench test does not copy the relay's tables.
 *
 * - Its name holds a hash of the migrations' SQL, so a new migration (or an edited one on a branch)
 *   gets a template of its own and never a stale one.
 * - Test processes running at once take turns through an advisory lock; a template counts as built
 *   only once it is marked IS_TEMPLATE, the last step, so a build that died half way is dropped and
 *   built again by the next process.
 * - Templates of other migrations are dropped when built over a day ago: recent ones likely belong
 *   to another checkout testing on the same server at the same time (one dropped all the same is
 *   built again by the process that misses it: `createTestDatabase`).
 * - Nobody may connect to a template (ALLOW_CONNECTIONS false): a connection would make every
 *   `CREATE DATABASE ... TEMPLATE` wait for it, then fail.
 */

const TEMPLATE_PREFIX = 'hilbench_template_';
/** Advisory lock taken while a template is looked for, built or dropped ('tmpl'). */
const TEMPLATE_LOCK_KEY = 0x746d706c;
/** How long a process waits for another one building the template (a build takes seconds). */
const TEMPLATE_LOCK_TIMEOUT_MS = 120_000;
/** A template of other migrations is dropped once this old: a recent one is likely another checkout's, in use. */
const STALE_TEMPLATE_AGE_MS = 24 * 3_600_000;
const BUILT_AT = /built_at_ms=(\d+)/;

/** Every statement a migration runs, in order (answers are not needed: migrations are scripts). */
function statementsOf(migration: Migration): string[] {
  const sql: string[] = [];
  try {
    const steps = migration.up();
    for (let next = steps.next(); !next.done; next = steps.next(undefined)) sql.push(next.value.sql);
  } catch {
    // A step that needs an answer: its code stands in for the statements it would run.
    sql.push(migration.up.toString());
  }
  return sql;
}

/** Which tables a template holds, already migrated: the bench's, the relay's (schema `relay`) or both, as `hilbench serve` keeps them in one database. */
export type TemplateTables = 'bench' | 'relay' | 'both';

const schemasOf: Record<TemplateTables, ReadonlyArray<'bench' | 'relay'>> = { bench: ['bench'], relay: ['relay'], both: ['bench', 'relay'] };
const migrationsOf = { bench: pgBenchMigrations, relay: pgRelayMigrations } as const;

/** The name of the template of `tables`: a hash of their migrations' SQL in it. */
export function templateName(tables: TemplateTables): string {
  const hash = createHash('sha256');
  for (const schema of schemasOf[tables]) {
    for (const migration of migrationsOf[schema]) hash.update(`${schema} ${migration.version} ${migration.name}\0${statementsOf(migration).join('\0')}\0`);
  }
  return `${TEMPLATE_PREFIX}${tables}_${hash.digest('hex').slice(0, 16)}`;
}

/** `base` with its database name replaced by `name`. */
export function databaseUrl(base: string, name: string): string {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

const ensured = new Map<string, Promise<string>>();

/**
 * The name of the template of `tables` on the server of `baseUrl`, built first if absent; looked
 * for once per process (a test file), then only `CREATE DATABASE ... TEMPLATE` is left per
 * database. `again`: looked for anew (the one found before was dropped meanwhile). `name`: a
 * template of the caller's own instead of the shared one, for tests that drop it (the templates'
 * own test): dropping the shared one would fail another worker's copy caught mid-drop.
 */
export function migratedTemplate(baseUrl: string, tables: TemplateTables, options: { again?: boolean; name?: string } = {}): Promise<string> {
  const name = options.name ?? templateName(tables);
  const key = `${name} ${baseUrl}`;
  if (options.again === true) ensured.delete(key);
  let template = ensured.get(key);
  if (template === undefined) {
    template = ensureTemplate(baseUrl, name, tables);
    // A failed build is tried again by the next database asked for, with the error it meets then.
    template.catch(() => ensured.delete(key));
    ensured.set(key, template);
  }
  return template;
}

/** `name`, built by the migrations of `tables` unless a process built it before (exported for its own test). */
export async function ensureTemplate(baseUrl: string, name: string, tables: TemplateTables): Promise<string> {
  const admin = new pg.Client(pgConnection(baseUrl));
  await admin.connect();
  try {
    await admin.query(`SET lock_timeout = ${TEMPLATE_LOCK_TIMEOUT_MS}`);
    try {
      await admin.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK_KEY]);
    } catch (err) {
      throw new Error(
        `waited ${TEMPLATE_LOCK_TIMEOUT_MS / 1000} s for another test process to build the PostgreSQL test template ${name}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    try {
      const found = await admin.query<{ datistemplate: boolean }>('SELECT datistemplate FROM pg_database WHERE datname = $1', [name]);
      if (found.rows[0]?.datistemplate === true) return name;
      // Half built by a process that died: built again from nothing.
      if (found.rows[0] !== undefined) await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
      await dropStaleTemplates(admin, name);
      await buildTemplate(admin, baseUrl, name, tables);
      return name;
    } finally {
      await admin.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK_KEY]);
    }
  } finally {
    await admin.end();
  }
}

async function buildTemplate(admin: pg.Client, baseUrl: string, name: string, tables: TemplateTables): Promise<void> {
  await admin.query(`CREATE DATABASE ${name}`);
  const url = databaseUrl(baseUrl, name);
  // The stores' own openers run the migrations, exactly as a server starting on an empty database does.
  if (schemasOf[tables].includes('bench')) await (await PostgresBenchStore.open(url, { poolSize: 1 })).close();
  if (schemasOf[tables].includes('relay')) await (await PgRelayEngine.open(url, () => undefined, { poolSize: 1 })).close();
  await admin.query(`COMMENT ON DATABASE ${name} IS 'hilbench test template (test/support/postgres-template.ts) built_at_ms=${Date.now()}'`);
  await admin.query(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS false`);
  // Last: from here on the template counts as built.
  await admin.query(`ALTER DATABASE ${name} WITH IS_TEMPLATE true`);
}

/**
 * Templates of the family of `current` (its name up to the last `_`: the same tables) built by
 * other migrations (older code) a while ago. A family is the name without its hash, so a test's
 * own templates (`..._bench_x<run>_<k>`) never reach the real ones (`..._bench_<hash>`).
 */
async function dropStaleTemplates(admin: pg.Client, current: string): Promise<void> {
  const family = current.slice(0, current.lastIndexOf('_') + 1);
  const templates = await admin.query<{ datname: string; comment: string | null }>(
    "SELECT datname, shobj_description(oid, 'pg_database') AS comment FROM pg_database WHERE starts_with(datname, $1) AND datname <> $2",
    [family, current],
  );
  for (const { datname, comment } of templates.rows) {
    const builtAtMs = Number(BUILT_AT.exec(comment ?? '')?.[1] ?? 0);
    if (Date.now() - builtAtMs < STALE_TEMPLATE_AGE_MS) continue;
    await admin.query(`ALTER DATABASE ${datname} WITH IS_TEMPLATE false`);
    await admin.query(`DROP DATABASE ${datname} WITH (FORCE)`);
  }
}
