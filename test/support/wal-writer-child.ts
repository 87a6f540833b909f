/**
 * A child process for `test/integration/wal-checkpoint-crash.test.ts`: commits numbered rows to
 * the SQLite file named in argv[2] through a `WalCheckpointer` with small bounds (so checkpoints
 * run on its thread and on the loop), prints `accepted <n>` after each commit, `durable <n>` once a
 * `WalSync` (decision 0480, as the relay store has) synced it, and `checkpoint <where>` after each
 * checkpoint, and runs until it is killed.
 *
 * Told `settle` on stdin, it stops the stream and commits one row at a time, each after the
 * thread's checkpoint in flight has answered, so a checkpoint on the thread runs alone and copies
 * the whole WAL. After the first one that did, it commits one more row (SQLite then starts the WAL
 * again from its beginning, over frames the database file must already hold), prints `durable <n>`
 * once it is synced and `settled`, and waits to be killed: the moment a power cut tests the
 * checkpointer's syncs, reached by events, not by timing.
 */
import Database from 'better-sqlite3';
import { setImmediate as turn } from 'node:timers/promises';
import { type CheckpointReport, WalCheckpointer, checkpointThread } from '../../server/storage/wal-checkpointer.js';
import { WalSync } from '../../server/storage/wal-sync.js';

const file = process.argv[2];
if (!file) throw new Error('usage: wal-writer-child <database file>');
const db = new Database(file);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec('CREATE TABLE IF NOT EXISTS accepted (n INTEGER PRIMARY KEY, body BLOB NOT NULL)');

let settle = false;
process.stdin.on('data', (chunk: Buffer) => {
  if (chunk.toString().includes('settle')) settle = true;
});

let n = 0;
/** The thread's checkpoint in flight: the row committed last when it was asked for, and its answer. */
let threadCheckpoint: { atRow: number; outcome: Promise<CheckpointReport | Error> } | undefined;
const checkpointer = new WalCheckpointer(db, {
  checkpointPages: 30,
  maxWalPages: 90,
  offLoop: (databaseFile) => {
    const thread = checkpointThread(databaseFile);
    return {
      request: (done) => {
        const atRow = n;
        threadCheckpoint = {
          atRow,
          outcome: new Promise((answered) =>
            thread.request((outcome) => {
              done(outcome);
              answered(outcome);
            }),
          ),
        };
      },
      stop: () => thread.stop(),
      get alive() {
        return thread.alive;
      },
    };
  },
  onCheckpoint: (outcome) => process.stdout.write(outcome instanceof Error ? `failed ${outcome.message}\n` : outcome.busy ? '' : `checkpoint ${outcome.where}\n`),
});
// After the table: the WAL file exists once something was written.
const walSync = new WalSync(`${file}-wal`, { owner: 'test writer' });
const insert = db.prepare('INSERT INTO accepted (n, body) VALUES (?, ?)');

function commit(): void {
  n++;
  insert.run(n, Buffer.alloc(3000, n % 251));
  checkpointer.noteCommit();
  walSync.noteCommit();
  process.stdout.write(`accepted ${n}\n`);
  // What a relay answers only once it settles (a sync that began after this commit ended).
  const row = n;
  void walSync.whenDurable()?.then(
    () => process.stdout.write(`durable ${row}\n`),
    (err: unknown) => process.stdout.write(`failed ${String(err)}\n`),
  );
}

while (!settle) {
  commit();
  // Every few commits the loop turns, so the thread's answers arrive as they would in a server.
  if (n % 4 === 0) await turn();
}

for (;;) {
  const asked = threadCheckpoint;
  if (asked) {
    threadCheckpoint = undefined;
    const outcome = await asked.outcome;
    // Whole: every frame of the WAL copied, and no commit since it was asked for.
    if (!(outcome instanceof Error) && !outcome.busy && outcome.logFrames > 0 && outcome.checkpointedFrames === outcome.logFrames && asked.atRow === n) break;
  }
  commit();
  await turn();
}
commit();
await walSync.whenDurable();
process.stdout.write(`durable ${n}\nsettled\n`);
