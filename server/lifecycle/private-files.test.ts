import Database from 'better-sqlite3';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensurePrivateDir, prepareOwnerOnlyDatabase, tightenTree } from './private-files.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'private-files-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const modeOf = (p: string) => statSync(p).mode & 0o777;

/** Runs `fn` with the usual umask 022, so files are created 0644 unless given a mode. */
function withUmask022<T>(fn: () => T): T {
  const previous = process.umask(0o022);
  try {
    return fn();
  } finally {
    process.umask(previous);
  }
}

describe('owner-only data files', () => {
  it('a SQLite database and the -wal and -shm files SQLite makes beside it are 0600', () => {
    const file = path.join(scratch, 'db.sqlite');
    const db = withUmask022(() => {
      prepareOwnerOnlyDatabase(file);
      const opened = new Database(file);
      opened.pragma('journal_mode = WAL');
      opened.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)');
      return opened;
    });
    try {
      expect([modeOf(file), modeOf(`${file}-wal`), modeOf(`${file}-shm`)]).toEqual([0o600, 0o600, 0o600]);
    } finally {
      db.close();
    }
  });

  it('narrows an existing database and its WAL files left 0644', () => {
    const file = path.join(scratch, 'old.sqlite');
    for (const f of [file, `${file}-wal`, `${file}-shm`]) writeFileSync(f, '', { mode: 0o644 });
    chmodSync(file, 0o644);
    prepareOwnerOnlyDatabase(file);
    expect([modeOf(file), modeOf(`${file}-wal`), modeOf(`${file}-shm`)]).toEqual([0o600, 0o600, 0o600]);
  });

  it('creates data directories 0700 and narrows an existing 0755 one', () => {
    const dir = path.join(scratch, 'made', 'data');
    withUmask022(() => ensurePrivateDir(dir));
    expect(modeOf(dir)).toBe(0o700);
    chmodSync(dir, 0o755);
    ensurePrivateDir(dir);
    expect(modeOf(dir)).toBe(0o700);
  });

  it('tightenTree narrows every folder and file open to others, leaves private ones and does not follow links', () => {
    const root = path.join(scratch, 'tree');
    const outside = path.join(scratch, 'outside.txt');
    withUmask022(() => {
      mkdirSync(path.join(root, 'firmware'), { recursive: true });
      writeFileSync(path.join(root, 'bench.sqlite'), 'x');
      writeFileSync(path.join(root, 'firmware', 'blob'), 'x');
      writeFileSync(path.join(root, 'key'), 'x', { mode: 0o600 });
      writeFileSync(outside, 'x');
    });
    symlinkSync(outside, path.join(root, 'link'));
    chmodSync(root, 0o755);
    const changed = tightenTree(root);
    expect(changed.sort()).toEqual([root, path.join(root, 'bench.sqlite'), path.join(root, 'firmware'), path.join(root, 'firmware', 'blob')].sort());
    expect([root, path.join(root, 'firmware')].map(modeOf)).toEqual([0o700, 0o700]);
    expect(modeOf(path.join(root, 'firmware', 'blob'))).toBe(0o600);
    expect(modeOf(outside)).toBe(0o644);
    expect(tightenTree(root)).toEqual([]);
  });
});
