import type Database from 'better-sqlite3';
import { one, run, runStepsSync, script, type Steps } from './sql-steps.js';
import { sqliteStatements } from './sqlite-statements.js';

/**
 * The one migration runner of every hilbench database (decisions 0311, 0545): the bench's and the
 * relay's, on SQLite and on PostgreSQL. Written once as steps (`sql-steps.ts`), so it runs
 * synchronously where the connection is synchronous (SQLite, the relay's PostgreSQL connection)
 * and asynchronously on a `pg` client (the bench's PostgreSQL store); what differs per database is
 * a `MigrationPlace`. Each database keeps its own list of steps and its own version numbers, so
 * every database an earlier hilbench wrote opens as before.
 */

/**
 * One step of a database's schema. Append only: a shipped migration is never edited, a change is
 * a new entry with the next version. `up` runs inside the transaction that records it, so on
 * SQLite it must not change PRAGMAs that SQLite ignores in a transaction (journal_mode, foreign_keys).
 */
export interface Migration {
  /** 1, 2, 3, ...: consecutive, in array order. */
  readonly version: number;
  /** What the step does, for error messages and the decision trail (`'baseline'`, `'jobs by session'`). */
  readonly name: string;
  readonly up: () => Steps<void>;
}

/** Where migrations run: what differs between the databases. */
export interface MigrationPlace {
  /** What the database is, for the refusal message: `'the relay database'`. */
  readonly label: string;
  /** The table the version lives in (default `schema_version`; the relay's PostgreSQL tables: `relay.schema_version`). */
  readonly versionTable?: string;
  /**
   * How a step's transaction begins. SQLite: `BEGIN IMMEDIATE`, the write lock first, so two
   * processes opening one file take turns. PostgreSQL: `BEGIN`, the turns taken by `enter`.
   */
  readonly begin: 'BEGIN IMMEDIATE' | 'BEGIN';
  /** Scripts run before the first look at the version (PostgreSQL: a session advisory lock, so replicas starting together take turns). */
  readonly enter?: readonly string[];
  /** Scripts run at the end, whatever happened (the advisory lock's release). */
  readonly leave?: readonly string[];
}

export interface MigrationResult {
  /** The schema version found before any step ran (0: a new, or a never-versioned, database). */
  readonly fromVersion: number;
  /** The schema version after: always the last migration's version. */
  readonly toVersion: number;
}

/** Thrown when a database was written by a newer hilbench: running older code on it could corrupt it. */
export class DatabaseNewerThanCodeError extends Error {
  constructor(
    readonly label: string,
    readonly databaseVersion: number,
    readonly codeVersion: number,
  ) {
    super(
      `${label} has schema version ${databaseVersion}, newer than this hilbench understands (${codeVersion}); ` +
        'upgrade hilbench or use another --data-dir',
    );
    this.name = 'DatabaseNewerThanCodeError';
  }
}

/** The version recorded in `table`, creating the table when absent (its name and shape since the first release). */
function* versionIn(table: string): Steps<number> {
  yield* script(`CREATE TABLE IF NOT EXISTS ${table} (version INTEGER NOT NULL)`);
  return Number((yield* one<{ version: number }>(`SELECT version FROM ${table}`))?.version ?? 0);
}

function* recordVersion(table: string, version: number): Steps<void> {
  if ((yield* run(`UPDATE ${table} SET version = ?`, [version])) === 0) yield* run(`INSERT INTO ${table} (version) VALUES (?)`, [version]);
}

/** The version `migrations` bring a database to; checks they are numbered 1..n in order. */
export function latestVersion(migrations: readonly Migration[]): number {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migration "${m.name}" has version ${m.version}; expected ${i + 1} (versions are 1..n in order)`);
  });
  return migrations.length;
}

/**
 * Brings the database to the last of `migrations`: each pending step in its own transaction
 * together with the version it reaches, so a failing step leaves the database at the step before
 * it, never half-migrated. A database newer than the code is refused untouched.
 */
export function* migrate(migrations: readonly Migration[], place: MigrationPlace): Steps<MigrationResult> {
  const latest = latestVersion(migrations);
  const table = place.versionTable ?? 'schema_version';
  for (const sql of place.enter ?? []) yield* script(sql);
  try {
    const fromVersion = yield* versionIn(table);
    if (fromVersion > latest) throw new DatabaseNewerThanCodeError(place.label, fromVersion, latest);
    for (const migration of migrations.slice(fromVersion)) {
      yield* script(place.begin);
      try {
        // Read again in the transaction: another connection may have run this step meanwhile.
        if ((yield* versionIn(table)) < migration.version) {
          yield* migration.up();
          yield* recordVersion(table, migration.version);
        }
        yield* script('COMMIT');
      } catch (err) {
        yield* rollBack();
        throw err;
      }
    }
    return { fromVersion, toVersion: latest };
  } finally {
    for (const sql of place.leave ?? []) {
      try {
        yield* script(sql);
      } catch {
        // The connection is gone, and its session's locks with it; the first error is the one to tell.
      }
    }
  }
}

function* rollBack(): Steps<void> {
  try {
    yield* script('ROLLBACK');
  } catch {
    // A lost connection rolled the transaction back itself.
  }
}

/** Brings the SQLite database `db` to the last of `migrations` (the bench's file, the relay's, a test's handle). */
export function runMigrations(db: Database.Database, migrations: readonly Migration[], options: { label?: string } = {}): MigrationResult {
  return runStepsSync(migrate(migrations, { label: options.label ?? 'the database', begin: 'BEGIN IMMEDIATE' }), sqliteStatements(db).execute);
}

/** The schema version recorded in the SQLite database `db` (0 when none is). */
export function schemaVersionOf(db: Database.Database): number {
  return runStepsSync(versionIn('schema_version'), sqliteStatements(db).execute);
}

/** A migration that runs one SQL script: most steps are nothing more. */
export const sqlMigration = (version: number, name: string, sql: string, options: { timeoutMs?: number } = {}): Migration => ({
  version,
  name,
  up: () => script(sql, options),
});
