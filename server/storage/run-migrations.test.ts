import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DatabaseNewerThanCodeError, latestVersion, runMigrations, schemaVersionOf, sqlMigration, type Migration } from './run-migrations.js';
import { script } from './sql-steps.js';

const dirs: string[] = [];
const dir = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'hilbench-migrations-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const tables = (db: Database.Database) =>
  (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((r) => r.name);

const first = sqlMigration(1, 'baseline', 'CREATE TABLE IF NOT EXISTS things (thing_id TEXT PRIMARY KEY, created_ms INTEGER NOT NULL)');
const second = sqlMigration(2, 'things by time', 'CREATE INDEX things_by_created ON things (created_ms)');

describe('runMigrations', () => {
  it('brings a new database to the last version and records it', () => {
    const db = new Database(':memory:');
    expect(runMigrations(db, [first, second])).toEqual({ fromVersion: 0, toVersion: 2 });
    expect(schemaVersionOf(db)).toBe(2);
    expect(tables(db)).toEqual(['schema_version', 'things']);
    expect(db.prepare('SELECT COUNT(*) AS n FROM schema_version').get()).toEqual({ n: 1 });
  });

  it('runs only the steps a database has not seen, and nothing on a second open', () => {
    const file = path.join(dir(), 'a.sqlite');
    const ran: number[] = [];
    const counted = (m: Migration): Migration => ({
      ...m,
      up: function* () {
        ran.push(m.version);
        yield* m.up();
      },
    });
    const db = new Database(file);
    runMigrations(db, [counted(first)]);
    db.close();
    const again = new Database(file);
    expect(runMigrations(again, [counted(first), counted(second)])).toEqual({ fromVersion: 1, toVersion: 2 });
    expect(runMigrations(again, [counted(first), counted(second)])).toEqual({ fromVersion: 2, toVersion: 2 });
    expect(ran).toEqual([1, 2]);
    again.close();
  });

  it('adopts a never-versioned database whose tables exist when the baseline says IF NOT EXISTS', () => {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE things (thing_id TEXT PRIMARY KEY, created_ms INTEGER NOT NULL)');
    db.prepare('INSERT INTO things VALUES (?, ?)').run('t1', 5);
    expect(runMigrations(db, [first, second])).toEqual({ fromVersion: 0, toVersion: 2 });
    expect(db.prepare('SELECT * FROM things').all()).toEqual([{ thing_id: 't1', created_ms: 5 }]);
  });

  it('leaves the database at the step before a failing one, with nothing of the failing step', () => {
    const db = new Database(':memory:');
    const broken: Migration = {
      version: 2,
      name: 'half done',
      up: function* () {
        yield* script('CREATE TABLE half (x INTEGER)');
        throw new Error('boom');
      },
    };
    expect(() => runMigrations(db, [first, broken])).toThrow('boom');
    expect(schemaVersionOf(db)).toBe(1);
    expect(tables(db)).toEqual(['schema_version', 'things']);
  });

  it('refuses a database newer than the code and leaves it untouched', () => {
    const db = new Database(':memory:');
    runMigrations(db, [first, second]);
    let ran = false;
    const spy: Migration = {
      ...first,
      up: function* () {
        ran = true;
        yield* first.up();
      },
    };
    expect(() => runMigrations(db, [spy], { label: 'the relay database' })).toThrow(DatabaseNewerThanCodeError);
    expect(() => runMigrations(db, [spy], { label: 'the relay database' })).toThrow(
      /^the relay database has schema version 2, newer than this hilbench understands \(1\)/,
    );
    expect(ran).toBe(false);
    expect(schemaVersionOf(db)).toBe(2);
  });

  it('reads the version table the bench store has always written', () => {
    // Bench databases from before the shared runner: one row, the number of migrations applied.
    const db = new Database(':memory:');
    db.exec('CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (1);');
    db.exec('CREATE TABLE things (thing_id TEXT PRIMARY KEY, created_ms INTEGER NOT NULL)');
    expect(runMigrations(db, [first, second])).toEqual({ fromVersion: 1, toVersion: 2 });
    expect(db.prepare('SELECT version FROM schema_version').all()).toEqual([{ version: 2 }]);
  });

  it('rejects migrations that are not numbered 1..n in order', () => {
    expect(() => latestVersion([second])).toThrow(/"things by time" has version 2; expected 1/);
    expect(() => latestVersion([first, first])).toThrow(/expected 2/);
    expect(latestVersion([])).toBe(0);
  });
});
