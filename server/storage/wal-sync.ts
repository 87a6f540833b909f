import { closeSync, fdatasync, fdatasyncSync, fstatSync, fsyncSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

/** Makes a file's written data durable: fdatasync on libuv's thread pool by default; injectable in tests. */
export type SyncFile = (fd: number) => Promise<void>;

const fdatasyncOnThreadPool: SyncFile = (fd) => new Promise((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));

export interface WalSyncOptions {
  /**
   * The sync off the event loop; default fdatasync on the thread pool. Always off the loop: syncing
   * on it when one request was open gained a sequential client 0.03-0.07 of the GET /me ratio but
   * cost four clients 0.07-0.16, as the loop then stalled just as the others' requests arrived.
   */
  syncFile?: SyncFile;
  /**
   * Whose database this is, as its failure names it ("the <owner> database's WAL ...; restart the
   * <owner>"): `relay` by default (decision 0480); a replaced WAL: decision 0504.
   */
  owner?: string;
}

/**
 * Group commit for a SQLite database (the relay's), off the event loop (decision 0480). SQLite runs
 * with `synchronous = NORMAL`: a commit writes its WAL frames but does not wait for the disk.
 * This class then makes them durable with one fdatasync of the WAL file on libuv's thread pool,
 * and every answer waits for a sync that began after the last commit (`whenDurable`). So nothing is
 * answered, and nothing committed is shown to anyone, before it is on disk, as with
 * `synchronous = FULL`, but the event loop parses, verifies and commits other requests while the
 * disk works, and all commits made during one sync share the next one.
 *
 * Why this is sound: on Linux an fdatasync through any descriptor flushes the file's dirty pages;
 * SQLite never replaces the WAL file while a connection is open (it rewrites it from the start
 * after a checkpoint, in place); with NORMAL, SQLite itself syncs the WAL before a checkpoint copies
 * it into the database and syncs the database after, so the database file needs nothing from us.
 */
export class WalSync {
  /** Commits noted (`noteCommit`) since the store opened. */
  private committed = 0;
  /** Commits known to be on disk. */
  private synced = 0;
  /** Syncs that completed (`syncs`), for the relay's metrics. */
  private syncsDone = 0;
  private inFlight: { upTo: number; done: Promise<void> } | null = null;
  /** One sync queued behind the one in flight, shared by every commit made since that one began. */
  private queued: Promise<void> | null = null;
  private failedWith: Error | null = null;
  private closed = false;
  private readonly fd: number;
  private readonly syncFile: SyncFile;
  private readonly owner: string;
  /** The WAL file the descriptor is open on (device and inode), to notice it replaced or deleted. */
  private readonly file: { dev: number; ino: number };

  constructor(
    private readonly walPath: string,
    options: WalSyncOptions = {},
  ) {
    this.syncFile = options.syncFile ?? fdatasyncOnThreadPool;
    this.owner = options.owner ?? 'relay';
    this.fd = openSync(walPath, 'r+');
    const { dev, ino } = fstatSync(this.fd);
    this.file = { dev, ino };
    // What the store committed before this existed (its migrations) is made durable here, once.
    fdatasyncSync(this.fd);
    // The WAL file may have just been created: its directory entry must be durable too, once.
    const dir = openSync(dirname(walPath), 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  }

  /** A write transaction committed: its frames are in the WAL, maybe not yet on disk. Starts a sync at once. */
  noteCommit(): void {
    this.committed++;
    // Started now, the sync runs while the caller builds its answer; a failure is kept for `whenDurable`.
    this.whenDurable()?.catch(() => {});
  }

  /**
   * Settles when every commit noted so far is on disk; null when they already are (answer at once,
   * no promise, no tick). Rejects, for good, once a sync has failed: after a failed fdatasync the
   * kernel may have dropped the unsynced pages, so nothing written since can be trusted.
   */
  whenDurable(): Promise<void> | null {
    if (this.failedWith) return Promise.reject(this.failedWith);
    // Closed: SQLite checkpointed and synced the database when its connection closed.
    if (this.synced >= this.committed || this.closed) return null;
    const inFlight = this.inFlight;
    // Between the end of a sync and the start of the one queued behind it (a microtask later),
    // that queued one is the next: it begins after this commit, so it covers it. Starting another
    // here would run two syncs at once, and `close` would wait for only one of them.
    if (!inFlight) return this.queued ?? this.start();
    if (inFlight.upTo >= this.committed) return inFlight.done;
    // The sync in flight began before the latest commit: one more after it, shared by all who wait.
    this.queued ??= inFlight.done.then(
      () => {
        this.queued = null;
        return this.start();
      },
      (err: unknown) => {
        this.queued = null;
        throw err;
      },
    );
    return this.queued;
  }

  /** fdatasyncs of the WAL that completed since this opened (the one at open not counted). */
  get syncs(): number {
    return this.syncsDone;
  }

  /** The failed sync that makes `whenDurable` reject for good; null while none failed. */
  get failure(): Error | null {
    return this.failedWith;
  }

  /** Whether a sync is running or queued (tests, and `close`). */
  get busy(): boolean {
    return this.inFlight !== null || this.queued !== null;
  }

  /** Closes the WAL descriptor once no sync uses it. */
  close(): void {
    this.closed = true;
    const pending = this.queued ?? this.inFlight?.done;
    if (!pending) {
      closeSync(this.fd);
      return;
    }
    const closeAfter = () => this.close();
    pending.then(closeAfter, closeAfter);
  }

  private failed(err: unknown): Error {
    const { owner } = this;
    this.failedWith = new Error(`the ${owner} database's WAL could not be synced to disk (${err instanceof Error ? err.message : String(err)}); restart the ${owner}`, { cause: err });
    return this.failedWith;
  }

  /**
   * Why the descriptor no longer reaches the database's WAL, or null while it does. SQLite deletes
   * the -wal file when the journal mode leaves WAL (and makes a new one if it comes back), and
   * someone may delete or replace it by hand: syncing the old descriptor would then report durable
   * what is in another file (or only in memory). One `stat` on the loop per sync, microseconds.
   */
  private staleFile(): string | null {
    // Closed: SQLite checkpointed the WAL into the database and may have deleted it, as it should.
    if (this.closed) return null;
    let now: ReturnType<typeof statSync>;
    try {
      now = statSync(this.walPath, { throwIfNoEntry: false });
    } catch (err) {
      // Thrown here it would leave noteCommit after the commit, with no failure kept: a failed sync.
      return `${this.walPath} could not be looked at: ${err instanceof Error ? err.message : String(err)}`;
    }
    if (!now) return `${this.walPath} was deleted under the open database (journal mode switched away from WAL?)`;
    if (now.ino !== this.file.ino || now.dev !== this.file.dev) return `${this.walPath} was replaced under the open database (journal mode switched and back?)`;
    return null;
  }

  private start(): Promise<void> {
    const upTo = this.committed;
    const stale = this.staleFile();
    const sync = stale === null ? this.syncFile(this.fd) : Promise.reject(new Error(stale));
    const done = sync.then(
      () => {
        this.synced = Math.max(this.synced, upTo);
        this.syncsDone++;
        this.inFlight = null;
      },
      (err: unknown) => {
        this.inFlight = null;
        throw this.failed(err);
      },
    );
    this.inFlight = { upTo, done };
    return done;
  }
}
