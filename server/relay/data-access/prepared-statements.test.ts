import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PreparedStatements } from './prepared-statements.js';

/**
 * Decision 0480: a write outside a transaction commits on its own, so it must be reported like a
 * transaction's commit (the store then syncs the WAL before any answer goes out); reads and writes
 * inside a transaction must not be (the transaction's end is the commit).
 */
let db: Database.Database;
let commits: number;
let sql: PreparedStatements;
beforeEach(() => {
  db = new Database(':memory:');
  db.exec('CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)');
  commits = 0;
  sql = new PreparedStatements(db, () => commits++);
});
afterEach(() => db.close());

describe('PreparedStatements reports autocommit writes', () => {
  it('reports each write outside a transaction, whichever method runs it', () => {
    sql.run('INSERT INTO t (v) VALUES (?)', 'a');
    expect(commits).toBe(1);
    expect(sql.get<{ k: number }>('INSERT INTO t (v) VALUES (?) RETURNING k', 'b')).toEqual({ k: 2 });
    expect(sql.value<number>('UPDATE t SET v = ? WHERE k = 1 RETURNING k', 'c')).toBe(1);
    expect(sql.all('DELETE FROM t WHERE k = 2 RETURNING k')).toEqual([{ k: 2 }]);
    expect(sql.allOnce('INSERT INTO t (v) VALUES (?) RETURNING v', 'd')).toEqual([{ v: 'd' }]);
    expect(sql.values('INSERT INTO t (v) VALUES (?) RETURNING v', 'e')).toEqual(['e']);
    expect(commits).toBe(6);
  });

  it('reports no read, and no write inside a transaction', () => {
    sql.run('INSERT INTO t (v) VALUES (?)', 'a');
    commits = 0;
    expect(sql.count('SELECT count(*) AS n FROM t')).toBe(1);
    expect(sql.values('SELECT v FROM t')).toEqual(['a']);
    db.transaction(() => sql.run('INSERT INTO t (v) VALUES (?)', 'b'))();
    expect(commits).toBe(0);
  });
});
