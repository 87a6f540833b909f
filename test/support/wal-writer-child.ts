/**
 * A child process for `test/integration/wal-checkpoint-crash.test.ts`: commits numbered rows to
 * the SQLite file named in argv[2] through a `WalCheckpointer` with small bounds (so checkpoints
 * run on its thread and on the loop), prints `accepted <n>` after each commit and `checkpoint
 * <where>` after each checkpoint, and runs until it is killed.
 */
import Database from 'better-sqlite3';
import { setImmediate as turn } from 'node:timers/promises';
import { WalCheckpointer } from '../../server/storage/wal-checkpointer.js';

const file = process.argv[2];
if (!file) throw new Error('usage: wal-writer-child <database file>');
const db = new Database(file);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec('CREATE TABLE IF NOT EXISTS accepted (n INTEGER PRIMARY KEY, body BLOB NOT NULL)');
const checkpointer = new WalCheckpointer(db, {
  checkpointPages: 30,
  maxWalPages: 90,
  onCheckpoint: (outcome) => process.stdout.write(outcome instanceof Error ? `failed ${outcome.message}\n` : outcome.busy ? '' : `checkpoint ${outcome.where}\n`),
});
const insert = db.prepare('INSERT INTO accepted (n, body) VALUES (?, ?)');
for (let n = 1; ; n++) {
  insert.run(n, Buffer.alloc(3000, n % 251));
  checkpointer.noteCommit();
  process.stdout.write(`accepted ${n}\n`);
  // Every few commits the loop turns, so the thread's answers arrive as they would in a server.
  if (n % 4 === 0) await turn();
}
