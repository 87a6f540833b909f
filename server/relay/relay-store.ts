import Database from 'better-sqlite3';
import { join } from 'node:path';
import { runMigrations } from '../storage/run-migrations.js';
import { ensurePrivateDir, prepareOwnerOnlyDatabase } from '../lifecycle/private-files.js';
import { loadOrCreateSecret } from './domain/credentials.js';
import type { EventKind } from '../storage/relay/event-repository.js';
import type { SharedFileContents } from './domain/file-store.js';
import { PgRelayEngine } from '../storage/relay/pg-relay-engine.js';
import type { Steps } from '../storage/sql-steps.js';
import { RelayData, synced, syncedData } from '../storage/relay/relay-data.js';
import { relayMigrations } from '../storage/relay/relay-migrations.js';
import { RelaySql, type SyncRelaySql } from '../storage/relay/relay-sql.js';
import { SqliteRelayExecutor } from '../storage/relay/sqlite-relay-executor.js';
import { WalSync, type WalSyncOptions } from '../storage/wal-sync.js';
import { WalCheckpointer, type WalCheckpointerOptions } from '../storage/wal-checkpointer.js';

/**
 * The relay's store: embedded SQLite (`relay.sqlite` in the data dir) by default, or PostgreSQL
 * shared by replicas (`RelayStore.openPostgres`, decision 0440). Both are used synchronously: the
 * relay never yields inside a transaction, and every write transaction holds the store's one
 * writer lock (SQLite's, or one PostgreSQL advisory lock for all replicas), so an event's seq order
 * is its commit order. That is what lets GET /events page by `seq > since` with no gap and no
 * duplicate while other requests (and other replicas) write.
 */
export class RelayStore {
  /** Every query of the relay, as typed repository calls (decision 0312). */
  readonly data: RelayData;
  /** The repositories with their steps run at once (`run`), for callers that are not steps themselves. */
  readonly syncData: ReturnType<typeof syncedData>;
  /** `sql` with its steps run at once (`run`): tests, benchmarks and checks at start. */
  readonly syncSql: SyncRelaySql;
  readonly sql: RelaySql;
  /** Runs the relay's steps: SQLite's executor, or PostgreSQL's synchronous connection. */
  private readonly runner: { run<T>(steps: Steps<T>): T };
  private readonly sqlite: Database.Database | undefined;
  private readonly pg: PgRelayEngine | undefined;
  /** The SQLite store's one reusable immediate transaction (see the constructor). */
  private readonly immediateTx: ((fn: () => unknown) => unknown) | undefined;
  private readonly invalidationListeners: (() => void)[] = [];
  /** SQLite only: makes commits durable off the event loop (decision 0480). */
  private readonly walSync: WalSync | undefined;
  /** SQLite only: WAL checkpoints off the event loop (decision 0760). */
  private readonly checkpointer: WalCheckpointer | undefined;
  /** Nesting depth of `tx`: a commit is noted when the outermost one returns. */
  private txDepth = 0;
  /** SQLite only: write transactions committed since the store opened (`commits`). */
  private committed = 0;

  /** The embedded SQLite store in `dataDir`. */
  constructor(dataDir: string, pg?: undefined, options?: SqliteRelayStoreOptions);
  /** Internal: see `openPostgres`. */
  constructor(dataDir: null, pg: PgRelayEngine);
  constructor(
    readonly dataDir: string | null,
    pg?: PgRelayEngine,
    options: SqliteRelayStoreOptions = {},
  ) {
    if (dataDir === null) {
      if (!pg) throw new TypeError('RelayStore: a PostgreSQL engine is required without a data dir');
      this.pg = pg;
      this.sql = pg.sql;
      this.runner = pg.steps;
    } else {
      // Phone numbers and credentials: the folder 0700, the database (and so its -wal/-shm) 0600.
      ensurePrivateDir(dataDir);
      prepareOwnerOnlyDatabase(join(dataDir, 'relay.sqlite'));
      const db = new Database(join(dataDir, 'relay.sqlite'));
      db.pragma('journal_mode = WAL');
      // Commits write the WAL without waiting for the disk; `walSync` then syncs it off the event
      // loop and every answer waits for that (decision 0480): an accepted vote or registration is
      // on disk before anyone hears of it, as with FULL, and concurrent requests share one sync.
      db.pragma('synchronous = NORMAL');
      db.pragma('foreign_keys = ON');
      db.pragma('busy_timeout = 5000');
      runMigrations(db, relayMigrations, { label: 'the relay database' });
      this.sqlite = db;
      this.walSync = new WalSync(`${db.name}-wal`, options.wal);
      this.checkpointer = new WalCheckpointer(db, options.checkpoints);
      // Made once: better-sqlite3's `transaction(fn)` builds four wrapper functions and their
      // properties on every call, and a vote runs two (its batch and its savepoint).
      this.immediateTx = db.transaction((fn: () => unknown) => fn()).immediate;
      // One statement cache for all: the store has one connection.
      this.sql = new RelaySql('sqlite');
      this.runner = new SqliteRelayExecutor(db, () => this.noteCommit());
    }
    this.data = new RelayData(this.sql);
    this.syncData = syncedData(this.data, (steps) => this.run(steps));
    this.syncSql = synced(this.sql, (steps) => this.run(steps)) as unknown as SyncRelaySql;
  }

  /** The relay's tables in PostgreSQL at `databaseUrl` (schema `relay`), migrated; shared by every replica. */
  static openPostgres(databaseUrl: string): RelayStore {
    // The engine tells the store's cache listeners of another replica's commit; the store needs the engine first.
    const opened: { store?: RelayStore } = {};
    const engine = new PgRelayEngine(databaseUrl, () => opened.store?.invalidateCaches());
    opened.store = new RelayStore(null, engine);
    return opened.store;
  }

  /** `BEGIN IMMEDIATE` ... `COMMIT` around a function, a savepoint when nested (better-sqlite3's `transaction`). */
  private sqliteTx(): (fn: () => unknown) => unknown {
    if (!this.immediateTx) throw new Error('this relay store is on PostgreSQL; it has no SQLite database');
    return this.immediateTx;
  }

  /** The SQLite database (tests and migrations); throws on PostgreSQL. */
  get db(): Database.Database {
    if (!this.sqlite) throw new Error('this relay store is on PostgreSQL; it has no SQLite database');
    return this.sqlite;
  }

  get dialect(): 'sqlite' | 'postgres' {
    return this.sql.dialect;
  }

  /**
   * Runs the relay's steps (repository calls, the rules of votes and slices) to their end, now:
   * inside `tx` they are part of its transaction, outside it each write commits on its own.
   */
  run<T>(steps: Steps<T>): T {
    return this.runner.run(steps);
  }

  /** Runs `fn` in one write transaction; the change and its event commit together or not at all. Nested: a savepoint. */
  tx<T>(fn: () => T): T {
    // Steps returned instead of run would never run (a caller not yet written as steps; decision 0610).
    const checked = () => {
      const result = fn();
      if (isSteps(result)) throw new TypeError('RelayStore.tx got steps back: run them inside (store.run) or yield* them');
      return result;
    };
    if (this.pg) return this.withRollbackListeners(() => (this.pg as PgRelayEngine).tx(checked));
    this.txDepth++;
    let result: T;
    try {
      result = this.withRollbackListeners(() => this.sqliteTx()(checked) as T);
    } finally {
      this.txDepth--;
    }
    if (this.txDepth === 0) this.noteCommit();
    return result;
  }

  private noteCommit(): void {
    this.committed++;
    this.walSync?.noteCommit();
    this.checkpointer?.noteCommit();
  }

  /**
   * Write transactions committed since the store opened, a write outside `tx` counting as one
   * (SQLite; always 0 on PostgreSQL): the ingest bench reports them per accepted vote.
   */
  get commits(): number {
    return this.committed;
  }

  /**
   * Settles when everything committed so far is on disk; null when it already is. Every answer of
   * the relay waits for it (relay-service.ts), so no one hears of a commit a power cut could undo.
   * PostgreSQL syncs its own commits: always null there. Rejects for good once a sync failed.
   */
  whenDurable(): Promise<void> | null {
    return this.walSync?.whenDurable() ?? null;
  }

  /** Why commits can no longer be made durable (a failed sync; the relay must restart); null while they can. */
  get syncFailure(): Error | null {
    return this.walSync?.failure ?? null;
  }

  private withRollbackListeners<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      // Whatever `fn` wrote is gone (a nested call only rolls back its savepoint, but telling the
      // listeners too often only costs them a reload): in-memory views of those rows must forget them.
      this.invalidateCaches();
      throw err;
    }
  }

  /**
   * Calls `listener` whenever rows held in memory may no longer be the database's: a `tx` rolled
   * back (caches filled inside it may hold rows never committed; see Voting's slice cache), or, on
   * PostgreSQL, another replica committed since this one last looked (see `refresh`).
   */
  onCachesInvalid(listener: () => void): void {
    this.invalidationListeners.push(listener);
  }

  /**
   * On PostgreSQL, looks whether another replica committed since this one last did or looked, and
   * if so tells the `onCachesInvalid` listeners; call before serving a request from caches. A write
   * transaction does the same under the write lock. SQLite has one writer, this process: a no-op.
   */
  refresh(): void {
    this.pg?.refresh();
  }

  /** A 32-byte secret by name: a file in the data dir on SQLite, a row shared by every replica on PostgreSQL. */
  loadOrCreateSecret(name: string): Buffer {
    return this.pg ? this.pg.loadOrCreateSecret(name) : loadOrCreateSecret(this.dataDir as string, name);
  }

  /** File contents every replica reads (PostgreSQL); undefined on SQLite, whose files are the data dir's. */
  get sharedFiles(): SharedFileContents | undefined {
    return this.pg?.files;
  }

  private invalidateCaches(): void {
    for (const listener of this.invalidationListeners) listener();
  }

  /**
   * Appends an event; call inside the transaction that makes the change. `author` is the node
   * the event is about or by (the `authors` filter), `payload` is what a peer needs to verify it.
   */
  *appendEvent(kind: EventKind, author: string, subject: string, payload: unknown, nowMs: number, origin: string | null = null): Steps<number> {
    // Outside `tx` an event would be committed without the write lock: on PostgreSQL another
    // replica's event could then commit with a smaller seq after it, and a reader would skip it.
    return yield* this.appendEventJson(kind, author, subject, JSON.stringify(payload), nowMs, origin);
  }

  /** `appendEvent` with the payload already serialised (`JSON.stringify` of it), for a caller that has the text. */
  *appendEventJson(kind: EventKind, author: string, subject: string, payloadJson: string, nowMs: number, origin: string | null = null): Steps<number> {
    if (!(this.pg ? this.pg.inTransaction : this.db.inTransaction)) throw new Error(`RelayStore.appendEvent(${kind}) outside a transaction: call it inside tx`);
    return yield* this.data.events.append({ kind, author, subject, payloadJson, origin, nowMs });
  }

  close(): void {
    if (this.pg) this.pg.close();
    else if (this.sqlite?.open) {
      // The thread's connection first: the store's, closing last, checkpoints the WAL into the file.
      this.checkpointer?.close();
      this.sqlite.close();
      this.walSync?.close();
    }
  }
}

function isSteps(value: unknown): boolean {
  return typeof value === 'object' && value !== null && typeof (value as { next?: unknown }).next === 'function' && typeof (value as { throw?: unknown }).throw === 'function';
}

export interface SqliteRelayStoreOptions {
  /** How and when the WAL file is made durable (decision 0480); fdatasync on the thread pool by default. */
  wal?: WalSyncOptions;
  /** When the WAL is checkpointed, off the event loop (decision 0760). */
  checkpoints?: WalCheckpointerOptions;
}

export type { EventKind };
