import Database from 'better-sqlite3';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDataDir } from '../../test/support/relay-test-kit.js';
import { type CheckpointReport, type OffLoopCheckpoints, WalCheckpointer } from './wal-checkpointer.js';

const PAGE_BYTES = 4096;
const frameBytes = (pages: number) => 32 + pages * (PAGE_BYTES + 24);

let data: ReturnType<typeof tempDataDir>;
let db: Database.Database;
let checkpointer: WalCheckpointer | undefined;
beforeEach(() => {
  data = tempDataDir('wal-checkpointer-');
  db = new Database(join(data.dir, 'db.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE rows (id INTEGER PRIMARY KEY, body BLOB NOT NULL)');
});
afterEach(() => {
  checkpointer?.close();
  checkpointer = undefined;
  if (db.open) db.close();
  data.remove();
});

const walBytes = () => statSync(`${db.name}-wal`).size;
/** One commit of about `pages` new pages (a row of that many pages' bytes), then the checkpointer told. */
function commit(pages = 2): void {
  db.prepare('INSERT INTO rows (body) VALUES (?)').run(Buffer.alloc(pages * PAGE_BYTES - 200, 7));
  checkpointer?.noteCommit();
}

/** Off-loop checkpoints the test holds: each request waits until the test answers it. */
function gatedOffLoop() {
  const requests: ((outcome: CheckpointReport | Error) => void)[] = [];
  let stopped = false;
  const offLoop = (): OffLoopCheckpoints => ({
    request: (done) => requests.push(done),
    stop: async () => {
      stopped = true;
    },
    get alive() {
      return !stopped;
    },
  });
  return { requests, offLoop, stopped: () => stopped };
}

describe('WalCheckpointer (WAL checkpoints off the event loop, decision 0760)', () => {
  it('turns off SQLite\'s automatic checkpoint: with the thread held, the WAL grows past the threshold and stops at the bound, checkpointed on the loop', () => {
    const gate = gatedOffLoop();
    const outcomes: (CheckpointReport | Error)[] = [];
    checkpointer = new WalCheckpointer(db, { checkpointPages: 40, maxWalPages: 120, offLoop: gate.offLoop, onCheckpoint: (o) => outcomes.push(o) });
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    let largest = 0;
    for (let k = 0; k < 300; k++) {
      commit();
      largest = Math.max(largest, walBytes());
    }
    // Asked once, never answered: the thread "fell behind" for good.
    expect(gate.requests).toHaveLength(1);
    // Without SQLite's automatic checkpoint the WAL passed 40 pages; the bound held it near 120 (one commit over at most).
    expect(largest).toBeGreaterThan(frameBytes(100));
    expect(largest).toBeLessThanOrEqual(frameBytes(120 + 4));
    expect(checkpointer.counts.loop).toBeGreaterThan(3);
    expect(outcomes.every((o) => !(o instanceof Error) && o.where === 'loop')).toBe(true);
    checkpointer.close();
    expect(gate.stopped()).toBe(true);
  });

  it('starts a new thread for the next checkpoint when the last one ended (it failed), instead of asking it forever', () => {
    const threads: { requests: number; alive: boolean }[] = [];
    const offLoop = (): OffLoopCheckpoints => {
      const thread = { requests: 0, alive: true };
      threads.push(thread);
      return {
        request: (done) => {
          thread.requests++;
          // The thread dies during its checkpoint: the answer is its exit.
          thread.alive = false;
          done(new Error('the WAL checkpoint thread ended (exit code 1)'));
        },
        stop: async () => {},
        get alive() {
          return thread.alive;
        },
      };
    };
    checkpointer = new WalCheckpointer(db, { checkpointPages: 40, maxWalPages: 100_000, offLoop });
    for (let k = 0; k < 100; k++) commit();
    expect(threads.length).toBeGreaterThan(1);
    expect(threads.every((t) => t.requests === 1)).toBe(true);
    expect(checkpointer.counts.failed).toBe(threads.length);
  });

  it('checkpoints on its own thread: the WAL starts again from the beginning and the loop checkpoints nothing', async () => {
    const reports: (CheckpointReport | Error)[] = [];
    let reported: () => void = () => {};
    checkpointer = new WalCheckpointer(db, {
      checkpointPages: 40,
      maxWalPages: 400,
      onCheckpoint: (o) => {
        reports.push(o);
        reported();
      },
    });
    for (let round = 0; round < 3; round++) {
      const next = new Promise<void>((resolve) => (reported = resolve));
      // Write until the thread is asked (the WAL passed 40 pages), then let it answer.
      // No commit while it runs: a commit landing during a checkpoint would keep the WAL from starting again.
      while ((checkpointer.framesInWal() as number) <= 40) commit();
      await next;
      const report = reports.at(-1);
      if (report instanceof Error) throw report;
      expect(report).toMatchObject({ where: 'thread', busy: false });
      expect(report!.checkpointedFrames).toBe(report!.logFrames);
      // Wholly checkpointed: the next commit starts the WAL again, over the file's first frames.
      commit();
      expect(checkpointer.framesInWal()).toBeLessThan(8); // one commit's frames
    }
    expect(checkpointer.counts).toEqual({ thread: 3, loop: 0, failed: 0 });
  });

  it('keeps the WAL file when the WAL starts again, so later commits overwrite it (decision 1150), and counts frames, not the file\'s size', () => {
    const gate = gatedOffLoop();
    checkpointer = new WalCheckpointer(db, { checkpointPages: 40, maxWalPages: 120, offLoop: gate.offLoop });
    expect(db.pragma('journal_size_limit', { simple: true })).toBe(frameBytes(120));
    while (gate.requests.length === 0) commit();
    // The wal-index's count is SQLite's own (a checkpoint reports the frames it found).
    const [row] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
    expect(row).toMatchObject({ busy: 0, log: checkpointer.framesInWal(), checkpointed: checkpointer.framesInWal() });
    expect(row!.log).toBeGreaterThan(40);
    gate.requests[0]?.({ where: 'thread', busy: false, logFrames: row!.log, checkpointedFrames: row!.checkpointed });
    const fileBytes = walBytes();
    // Wholly checkpointed: the next commit starts the WAL again; the file keeps its length.
    commit();
    expect(checkpointer.framesInWal()).toBeLessThan(8); // one commit's frames
    // Commits up to the threshold overwrite the file (it does not grow) and ask for no checkpoint,
    // though the file is past the threshold: what counts is the WAL's frames.
    while ((checkpointer.framesInWal() as number) < 30) commit();
    expect(walBytes()).toBe(fileBytes);
    expect(gate.requests).toHaveLength(1);
  });

  it('where SQLite keeps no wal-index file (exclusive locking), reads the WAL file\'s size and has it cut back when the WAL starts again', () => {
    db.close();
    db = new Database(join(data.dir, 'exclusive.sqlite'));
    // Set before WAL mode: SQLite then keeps the wal-index in the process's memory, never in a -shm file.
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE rows (id INTEGER PRIMARY KEY, body BLOB NOT NULL)');
    expect(existsSync(`${db.name}-shm`)).toBe(false);
    const gate = gatedOffLoop();
    checkpointer = new WalCheckpointer(db, { checkpointPages: 40, maxWalPages: 120, offLoop: gate.offLoop });
    expect(checkpointer.framesInWal()).toBeUndefined();
    expect(db.pragma('journal_size_limit', { simple: true })).toBe(frameBytes(40));
    while (gate.requests.length === 0) commit();
    expect(walBytes()).toBeGreaterThan(frameBytes(40));
    const [row] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
    gate.requests[0]?.({ where: 'thread', busy: false, logFrames: row!.log, checkpointedFrames: row!.checkpointed });
    commit();
    expect(walBytes()).toBeLessThanOrEqual(frameBytes(40));
  });

  it('leaves the WAL checkpointed into the database file at close, the thread stopped first', async () => {
    let reported: () => void = () => {};
    const once = new Promise<void>((resolve) => (reported = resolve));
    checkpointer = new WalCheckpointer(db, { checkpointPages: 10, maxWalPages: 1000, onCheckpoint: () => reported() });
    while ((checkpointer.framesInWal() as number) <= 10) commit();
    commit();
    await once;
    for (let k = 0; k < 5; k++) commit();
    const rows = db.prepare('SELECT COUNT(*) AS n FROM rows').get() as { n: number };
    await checkpointer.close();
    checkpointer = undefined;
    db.close();
    // The last connection to close checkpoints and deletes the WAL: the thread's was closed first.
    expect(existsSync(`${db.name}-wal`)).toBe(false);
    const reopened = new Database(db.name, { readonly: true });
    expect(reopened.prepare('SELECT COUNT(*) AS n FROM rows').get()).toEqual(rows);
    reopened.close();
  });

  it('does nothing for a database in memory (no WAL file)', () => {
    const memory = new Database(':memory:');
    const none = new WalCheckpointer(memory, { offLoop: gatedOffLoop().offLoop });
    memory.exec('CREATE TABLE t (x)');
    none.noteCommit();
    expect(none.counts).toEqual({ thread: 0, loop: 0, failed: 0 });
    none.close();
    memory.close();
  });

  it('refuses a bound not above the threshold', () => {
    expect(() => new WalCheckpointer(db, { checkpointPages: 100, maxWalPages: 100 })).toThrow(/checkpointPages \(100\) < maxWalPages \(100\)/);
  });
});
