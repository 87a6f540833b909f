import type Database from 'better-sqlite3';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** What one checkpoint did (SQLite's `PRAGMA wal_checkpoint` row), and where it ran. */
export interface CheckpointReport {
  /** `thread`: the checkpoint thread's own connection; `loop`: the store's, on the event loop (the bound's fallback). */
  where: 'thread' | 'loop';
  /** Another checkpoint held SQLite's checkpoint lock: nothing was done. */
  busy: boolean;
  /** Frames in the WAL when it ran. */
  logFrames: number;
  /** Frames of the WAL now in the database file. */
  checkpointedFrames: number;
}

/** Runs `PRAGMA wal_checkpoint(PASSIVE)` off the event loop on a connection of its own; one request at a time. */
export interface OffLoopCheckpoints {
  /** Starts one checkpoint; `done` is called with its report or its failure, on the event loop. */
  request(done: (outcome: CheckpointReport | Error) => void): void;
  /** Closes its connection and ends; settles once it has (the store's connection must close last, to checkpoint at close). */
  stop(): Promise<void>;
  /** False once the thread has ended (it failed, or was stopped): a new one is started for the next checkpoint. */
  readonly alive: boolean;
}

export interface WalCheckpointerOptions {
  /** WAL pages past which the thread checkpoints (SQLite's own automatic checkpoint default: 1000). */
  checkpointPages?: number;
  /** WAL pages past which the store's connection checkpoints on the event loop, the thread having fallen behind: 4x `checkpointPages` by default. */
  maxWalPages?: number;
  /** Where checkpoints run off the loop: a worker thread by default (tests inject a gated one). */
  offLoop?: (databaseFile: string) => OffLoopCheckpoints;
  /** Told of each checkpoint's outcome (tests, the ingest bench). */
  onCheckpoint?: (outcome: CheckpointReport | Error) => void;
}

/**
 * SQLite's WAL checkpoints off the event loop (decision 0760). SQLite's automatic checkpoint runs
 * inside the commit that crosses its threshold: it copies the WAL into the database file and syncs
 * both on the committing thread, a stall of several ms on the event loop. Here the store's
 * connection never checkpoints by itself (`wal_autocheckpoint = 0`); after each commit
 * (`noteCommit`) one `fstat` of the WAL decides: past `checkpointPages` a thread with its own
 * connection runs a PASSIVE checkpoint (never waits for the writer, so the loop never waits for it),
 * and the store's next write transaction starts the WAL again from its beginning. Under a stream of
 * writes the thread may never catch up with the last frame (a commit lands during each checkpoint),
 * and SQLite only restarts a WAL that is wholly checkpointed; past `maxWalPages` the store's own
 * connection then checkpoints on the loop, between two transactions, so the WAL stays bounded. That
 * fallback copies only what the thread has not copied yet.
 *
 * Durability is SQLite's own: a checkpoint syncs the WAL before copying it and the database file
 * before marking the frames copied, on whichever connection runs it (`synchronous = NORMAL` there).
 *
 * The WAL file is kept at its bound's size when the WAL starts again (`journal_size_limit` is
 * `maxWalPages`' bytes, not `checkpointPages`'), so that a commit overwrites blocks the file already
 * has: an `fdatasync` after a write that grew the file also commits the file system's journal (its
 * size and new blocks), about twice the time here (decision 1150). How far the WAL has grown since
 * it started again is then read from SQLite's wal-index (`framesInWal`), not from the file's size.
 */
export class WalCheckpointer {
  private readonly pageBytes: number;
  private readonly checkpointBytes: number;
  private readonly maxWalBytes: number;
  /**
   * Where the WAL's length is read: the wal-index (the `-shm` file) for its last frame, or, where
   * SQLite keeps no such file (`locking_mode = EXCLUSIVE`), the WAL file for its size, which is
   * then cut back to `checkpointPages` when the WAL starts again. Undefined for a database without
   * a WAL (in memory), which has nothing to checkpoint.
   */
  private readonly walLength: WalLength | undefined;
  private readonly word = Buffer.alloc(4);
  private offLoop: OffLoopCheckpoints | undefined;
  private inFlight = false;
  /** WAL size when the thread was last asked: it is asked again once the WAL has grown a quarter of `checkpointPages` more. */
  private requestedAtBytes = 0;
  private closed = false;
  /** Checkpoints run by the thread, and by the store's connection on the loop (the bound's fallback). */
  readonly counts = { thread: 0, loop: 0, failed: 0 };
  /** The last failed checkpoint (an I/O error); null while none failed. Later checkpoints retry. */
  failure: Error | null = null;

  constructor(
    private readonly db: Database.Database,
    private readonly options: WalCheckpointerOptions = {},
  ) {
    const checkpointPages = options.checkpointPages ?? 1000;
    const maxWalPages = options.maxWalPages ?? 4 * checkpointPages;
    if (!(checkpointPages > 0 && maxWalPages > checkpointPages)) throw new RangeError(`WalCheckpointer: need 0 < checkpointPages (${checkpointPages}) < maxWalPages (${maxWalPages})`);
    this.pageBytes = Number(db.pragma('page_size', { simple: true }));
    // A WAL frame is a page and a 24-byte header; the file starts with a 32-byte header.
    this.checkpointBytes = 32 + checkpointPages * (this.pageBytes + 24);
    this.maxWalBytes = 32 + maxWalPages * (this.pageBytes + 24);
    db.pragma('wal_autocheckpoint = 0');
    this.walLength = db.memory || db.pragma('journal_mode', { simple: true }) !== 'wal' ? undefined : openWalLength(db.name);
    // When the WAL starts again from its beginning, SQLite cuts the file back to this size. Kept at
    // the bound, later commits overwrite the file (see above); read from the file's size, what was
    // written since the WAL last started again is its size past `checkpointBytes`.
    db.pragma(`journal_size_limit = ${this.walLength?.from === 'wal-file' ? this.checkpointBytes : this.maxWalBytes}`);
  }

  /**
   * Frames in the WAL since it last started again, from the wal-index header's `mxFrame` (SQLite's
   * WAL format: https://www.sqlite.org/walformat.html); undefined without a wal-index (see
   * `walLength`). Read on the store's connection's thread between its transactions, so the header
   * is the one its last commit wrote.
   */
  framesInWal(): number | undefined {
    if (this.walLength?.from !== 'wal-index') return undefined;
    if (readSync(this.walLength.fd, this.word, 0, 4, WAL_INDEX_MX_FRAME_AT) < 4) return 0;
    return LITTLE_ENDIAN ? this.word.readUInt32LE(0) : this.word.readUInt32BE(0);
  }

  /** The WAL's bytes written since it last started again. */
  private walBytes(walLength: WalLength): number {
    if (walLength.from === 'wal-file') return fstatSync(walLength.fd).size;
    return 32 + (this.framesInWal() ?? 0) * (this.pageBytes + 24);
  }

  /** A write committed (outside any transaction): checkpoints when the WAL has grown past a bound. Never throws. */
  noteCommit(): void {
    if (this.closed || this.walLength === undefined) return;
    const walBytes = this.walBytes(this.walLength);
    if (walBytes <= this.checkpointBytes) {
      this.requestedAtBytes = 0;
      return;
    }
    if (walBytes > this.maxWalBytes) {
      this.checkpointOnLoop();
      return;
    }
    if (this.inFlight || walBytes < this.requestedAtBytes + this.checkpointBytes / 4) return;
    this.requestedAtBytes = walBytes;
    this.inFlight = true;
    // A thread that died (an uncaught error, out of memory) is replaced rather than asked forever.
    if (this.offLoop && !this.offLoop.alive) this.offLoop = undefined;
    const offLoop = (this.offLoop ??= (this.options.offLoop ?? checkpointThread)(this.db.name));
    offLoop.request((outcome) => {
      this.inFlight = false;
      if (outcome instanceof Error) this.failed(outcome);
      else if (!outcome.busy) this.counts.thread++;
      this.options.onCheckpoint?.(outcome);
    });
  }

  /** The store's connection checkpoints now, on the loop (the WAL passed `maxWalPages`); busy while the thread's runs. */
  private checkpointOnLoop(): void {
    let outcome: CheckpointReport | Error;
    try {
      const [row] = this.db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
      outcome = { where: 'loop', busy: row?.busy === 1, logFrames: row?.log ?? 0, checkpointedFrames: row?.checkpointed ?? 0 };
      if (!outcome.busy) this.counts.loop++;
    } catch (err) {
      // After the commit: a throw would tell the caller its committed write failed. SQLite's own
      // automatic checkpoint ignores its failures the same way; the next commit tries again.
      outcome = this.failed(err);
    }
    this.options.onCheckpoint?.(outcome);
  }

  private failed(err: unknown): Error {
    this.counts.failed++;
    this.failure = err instanceof Error ? err : new Error(String(err));
    return this.failure;
  }

  /** Ends the thread (and its connection) before this returns: call before closing the store's connection, which then checkpoints the WAL as the last one. */
  /**
   * Stops the thread (its connection closed) before the store closes its own: settles when it has,
   * or null when no thread ran, so a store that never needed one closes in the same turn.
   */
  close(): Promise<void> | null {
    if (this.closed) return null;
    this.closed = true;
    if (this.walLength !== undefined) closeSync(this.walLength.fd);
    return this.offLoop?.alive ? this.offLoop.stop() : null;
  }
}

/** Where the wal-index header's `mxFrame`, a 32-bit integer in the machine's byte order, is in the `-shm` file (SQLite's WAL format). */
const WAL_INDEX_MX_FRAME_AT = 16;
const LITTLE_ENDIAN = endianness() === 'LE';

/** An open file the WAL's length is read from (see `WalCheckpointer.walLength`). */
type WalLength = { from: 'wal-index' | 'wal-file'; fd: number };

/** The wal-index to read the WAL's length from, or the WAL file where SQLite keeps no wal-index file. */
function openWalLength(databaseFile: string): WalLength {
  try {
    return { from: 'wal-index', fd: openSync(`${databaseFile}-shm`, 'r') };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return { from: 'wal-file', fd: openSync(`${databaseFile}-wal`, 'r') };
  }
}

/** How long `stop` waits for the thread to finish a checkpoint and close its connection. */
const STOP_TIMEOUT_MS = 10_000;

/**
 * The thread: its own connection to the database file, a PASSIVE checkpoint per message. CommonJS
 * text (an eval'd worker runs no TypeScript) loading better-sqlite3 from the path the caller
 * resolved. `synchronous = NORMAL` makes SQLite sync the WAL before copying and the database after.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
let db;
let openError;
try {
  const Database = require(workerData.sqlitePath);
  db = new Database(workerData.file, { fileMustExist: true });
  db.pragma('synchronous = NORMAL');
} catch (err) {
  openError = err;
}
parentPort.on('message', (message) => {
  if (message === 'stop') {
    try { if (db) db.close(); } finally { parentPort.close(); }
    return;
  }
  try {
    if (openError) throw openError;
    const row = db.pragma('wal_checkpoint(PASSIVE)')[0];
    parentPort.postMessage({ busy: row.busy === 1, logFrames: row.log, checkpointedFrames: row.checkpointed });
  } catch (err) {
    parentPort.postMessage({ error: String((err && err.message) || err) });
  }
});
`;

/** The default `offLoop`: a worker thread, started at the first checkpoint the database needs (exported for the WAL crash test's writer). */
export function checkpointThread(databaseFile: string): OffLoopCheckpoints {
  const sqlitePath = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(THREAD_SOURCE, { eval: true, workerData: { file: databaseFile, sqlitePath } });
  // The thread keeps no process alive: `stop` ends it, and a process that is done must be able to exit.
  worker.unref();
  let waiting: ((outcome: CheckpointReport | Error) => void) | undefined;
  const answer = (outcome: CheckpointReport | Error) => {
    const done = waiting;
    waiting = undefined;
    done?.(outcome);
  };
  worker.on('message', (message: { busy: boolean; logFrames: number; checkpointedFrames: number } | { error: string }) => {
    answer('error' in message ? new Error(`WAL checkpoint of ${databaseFile} failed: ${message.error}`) : { where: 'thread', ...message });
  });
  worker.on('error', (err) => answer(err));
  let alive = true;
  const exited = new Promise<void>((resolve) =>
    worker.on('exit', (code) => {
      alive = false;
      answer(new Error(`the WAL checkpoint thread of ${databaseFile} ended (exit code ${code})`));
      resolve();
    }),
  );
  return {
    get alive() {
      return alive;
    },
    request(done) {
      if (!alive) return done(new Error(`the WAL checkpoint thread of ${databaseFile} has ended`));
      waiting = done;
      worker.postMessage('check');
    },
    async stop() {
      if (!alive) return;
      worker.postMessage('stop');
      // Bounded: a thread that does not answer is ended; its connection closes as the thread goes,
      // and SQLite recovers any WAL left behind when the database next opens.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), STOP_TIMEOUT_MS)));
      if ((await Promise.race([exited, late])) === 'late') await worker.terminate();
      clearTimeout(timer);
    },
  };
}
