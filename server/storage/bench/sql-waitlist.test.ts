import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { migrateBenchDatabase } from './bench-store-migrations.js';
import { SqliteBenchStore } from './sqlite-bench-store.js';
import { SqlWaitlist } from './sql-side-stores.js';
import { SqliteExecutor } from './sql/sqlite-executor.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDbPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'hilbench-waitlist-'));
  dirs.push(dir);
  return join(dir, 'bench.sqlite');
}

describe('SqlWaitlist on SQLite', () => {
  it('adds, counts and lists newest first', async () => {
    const db = new Database(':memory:');
    migrateBenchDatabase(db);
    const list = new SqlWaitlist(new SqliteExecutor(db));
    expect(await list.count()).toBe(0);
    expect(await list.add({ email: 'a@example.org', kind: 'person', note: '', joinedAtMs: 1000 })).toEqual({ created: true });
    expect(await list.add({ email: 'b@example.org', kind: 'agent', note: 'ci', joinedAtMs: 2000 })).toEqual({ created: true });
    expect(await list.count()).toBe(2);
    expect(await list.list({ limit: 10 })).toEqual([
      { email: 'b@example.org', kind: 'agent', note: 'ci', joinedAtMs: 2000 },
      { email: 'a@example.org', kind: 'person', note: '', joinedAtMs: 1000 },
    ]);
    expect(await list.list({ limit: 1 })).toHaveLength(1);
    db.close();
  });

  it('keeps the first entry of an address: a second add changes nothing', async () => {
    const db = new Database(':memory:');
    migrateBenchDatabase(db);
    const list = new SqlWaitlist(new SqliteExecutor(db));
    await list.add({ email: 'a@example.org', kind: 'person', note: 'mine', joinedAtMs: 1000 });
    expect(await list.add({ email: 'a@example.org', kind: 'team', note: 'overwritten?', joinedAtMs: 5000 })).toEqual({ created: false });
    expect(await list.list({ limit: 5 })).toEqual([{ email: 'a@example.org', kind: 'person', note: 'mine', joinedAtMs: 1000 }]);
    db.close();
  });

  it('survives reopening the bench database file', async () => {
    const path = tempDbPath();
    const first = new SqliteBenchStore(path);
    await first.waitlist.add({ email: 'kept@example.org', kind: 'team', note: 'n', joinedAtMs: 42 });
    await first.close();
    const reopened = new SqliteBenchStore(path);
    expect(await reopened.waitlist.count()).toBe(1);
    expect(await reopened.waitlist.list({ limit: 1 })).toEqual([{ email: 'kept@example.org', kind: 'team', note: 'n', joinedAtMs: 42 }]);
    await reopened.close();
  });

  it('refuses an unknown kind or a fractional time, in code and in the table', async () => {
    const db = new Database(':memory:');
    migrateBenchDatabase(db);
    const list = new SqlWaitlist(new SqliteExecutor(db));
    // @ts-expect-error: the type refuses it too; this is the run-time guard.
    await expect(list.add({ email: 'a@example.org', kind: 'robot', note: '', joinedAtMs: 1 })).rejects.toThrow(/unknown waitlist kind/);
    await expect(list.add({ email: 'a@example.org', kind: 'person', note: '', joinedAtMs: 1.5 })).rejects.toThrow(/integer/);
    expect(() => db.prepare("INSERT INTO waitlist VALUES ('x@example.org', 'robot', '', 1)").run()).toThrow(/CHECK constraint/);
    expect(await list.count()).toBe(0);
    db.close();
  });
});
