import type Database from 'better-sqlite3';

/**
 * One step of a database's schema. Append only: a shipped migration is never edited, a change
 * is a new entry with the next version. `up` runs inside the transaction that records it, so it
 * must not change PRAGMAs that SQLite ignores in a transaction (journal_mode, foreign_keys).
 */
export interface Migration {
  /** 1, 2, 3, ...: consecutive, in array order. */
  readonly version: number;
  /** What the step does, for error messages and the decision trail (`'baseline'`, `'jobs by session'`). */
  readonly name: string;
  readonly up: (db: Database.Database) => void;
}

export interface MigrationOptions {
  /** What the database is, for the refusal message: `'the relay database'`. */
  readonly label?: string;
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

/** The table the version lives in: the bench store's name and shape since its first release, so its files keep working. */
const VERSION_TABLE_SQL = 'CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)';

/** The schema version recorded in `db` (0 when none is). */
export function schemaVersionOf(db: Database.Database): number {
  db.exec(VERSION_TABLE_SQL);
  const row = db.prepare('SELECT version FROM schema_version').get() as { version: number } | undefined;
  return row?.version ?? 0;
}

/** The version `migrations` bring a database to; checks they are numbered 1..n in order. */
export function latestVersion(migrations: readonly Migration[]): number {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migration "${m.name}" has version ${m.version}; expected ${i + 1} (versions are 1..n in order)`);
  });
  return migrations.length;
}

/**
 * Brings `db` to the last of `migrations`: each pending step in its own immediate transaction
 * together with the version it reaches, so a failing step leaves the database at the step
 * before it, never half-migrated. A database newer than the code is refused untouched.
 */
export function runMigrations(db: Database.Database, migrations: readonly Migration[], options: MigrationOptions = {}): MigrationResult {
  const latest = latestVersion(migrations);
  const fromVersion = schemaVersionOf(db);
  if (fromVersion > latest) throw new DatabaseNewerThanCodeError(options.label ?? 'the database', fromVersion, latest);
  for (const migration of migrations.slice(fromVersion)) {
    db.transaction(() => {
      // Read again under the write lock: another connection may have run this step meanwhile.
      const current = schemaVersionOf(db);
      if (current >= migration.version) return;
      migration.up(db);
      recordVersion(db, migration.version);
    }).immediate();
  }
  return { fromVersion, toVersion: latest };
}

function recordVersion(db: Database.Database, version: number): void {
  const updated = db.prepare('UPDATE schema_version SET version = ?').run(version);
  if (updated.changes === 0) db.prepare('INSERT INTO schema_version (version) VALUES (?)').run(version);
}

/** A migration that runs one SQL script: most steps are nothing more. */
export const sqlMigration = (version: number, name: string, sql: string): Migration => ({
  version,
  name,
  up: (db) => db.exec(sql),
});
