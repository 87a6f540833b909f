import Database from 'better-sqlite3';
import { join } from 'node:path';
import { runMigrations } from '../storage/run-migrations.js';
import { ensurePrivateDir, prepareOwnerOnlyDatabase } from '../lifecycle/private-files.js';
import { loadOrCreateSecret } from '../lifecycle/secret-file.js';
import { type EventKind, votePayloadJson } from '../storage/relay/event-repository.js';
import type { SharedFileContents } from '../storage/relay/shared-file-contents.js';
import { PgRelayEngine, type PgRelayEngineOptions } from '../storage/relay/pg-relay-engine.js';
import type { Steps } from '../storage/sql-steps.js';
import { type PlainData, RelayData, plainData, plainly } from '../storage/relay/relay-data.js';
import { relayMigrations } from '../storage/relay/relay-migrations.js';
import { type PlainRelaySql, RelaySql } from '../storage/relay/relay-sql.js';
import { SqliteRelayExecutor } from '../storage/relay/sqlite-relay-executor.js';
import { WalSync, type WalSyncOptions } from '../storage/wal-sync.js';
import { WalCheckpointer, type WalCheckpointerOptions } from '../storage/wal-checkpointer.js';

/**
 * The SQLite page cache of the relay's connection, in KiB: SQLite's own default, where better-sqlite3
 * builds it with 16 000. A commit after a b-tree page split walks the whole cache (decision 1140:
 * the split parks a page under the number 262 145 for a moment, and the commit then drops every
 * cached page past the end of the database by walking all of them), so a small cache makes those
 * commits cheaper; the pages a miss reads come from the OS's cache.
 */
export const RELAY_PAGE_CACHE_KIB = 2000;

/**
 * The relay's store: embedded SQLite (`relay.sqlite` in the data dir) by default, or PostgreSQL
 * shared by replicas (`RelayStore.openPostgres`, decision 0440). The relay's rules are steps
 * (generators of statements, decision 0610) that `plain` and `tx` run and answer with a promise:
 * synchronously on SQLite, so a rule never gives the event loop away there and its promise is
 * settled when `plain` or `tx` returns; awaited statement by statement on PostgreSQL, one rule at
 * a time per replica, so the event loop never waits for the database (decision 0700). Every write
 * transaction holds the store's one writer lock (SQLite's, or one PostgreSQL advisory lock for all
 * replicas), so an event's seq order is its commit order. That is what lets GET /events page by
 * `seq > since` with no gap and no duplicate while other requests (and other replicas) write.
 */
export class RelayStore {
  /** Every query of the relay, as typed repository steps (decision 0312), for rules and transactions. */
  readonly data: RelayData;
  /** The repositories with each call run on its own (`plain`): a promise of its answer. */
  readonly plainData: PlainData;
  /** The statement vocabulary with each statement run on its own (`plain`): checks at start, tests, benchmarks. */
  readonly plainSql: PlainRelaySql;
  readonly sql: RelaySql;
  private readonly sqlite: Database.Database | undefined;
  private readonly sqliteSteps: SqliteRelayExecutor | undefined;
  private readonly pg: PgRelayEngine | undefined;
  /** The SQLite store's one reusable immediate transaction (see the constructor). */
  private readonly immediateTx: ((fn: () => unknown) => unknown) | undefined;
  private readonly invalidationListeners: (() => void)[] = [];
  /** SQLite only: makes commits durable off the event loop (decision 0480). */
  private readonly walSync: WalSync | undefined;
  /** SQLite only: WAL checkpoints off the event loop (decision 0760). */
  private readonly checkpointer: WalCheckpointer | undefined;
  /** Write transactions committed since the store opened (`commits`). */
  private committed = 0;
  /** Savepoints open now: each gets its own name. */
  private savepoints = 0;

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
      db.pragma(`cache_size = -${RELAY_PAGE_CACHE_KIB}`);
      runMigrations(db, relayMigrations, { label: 'the relay database' });
      this.sqlite = db;
      this.walSync = new WalSync(`${db.name}-wal`, options.wal);
      this.checkpointer = new WalCheckpointer(db, options.checkpoints);
      // Made once: better-sqlite3's `transaction(fn)` builds four wrapper functions and their
      // properties on every call.
      this.immediateTx = db.transaction((fn: () => unknown) => fn()).immediate;
      // One statement cache for all: the store has one connection.
      this.sqliteSteps = new SqliteRelayExecutor(db, () => this.noteCommit());
      this.sql = new RelaySql('sqlite');
    }
    this.data = new RelayData(this.sql);
    this.plainData = plainData(this.data, (steps) => this.plain(steps));
    this.plainSql = plainly(this.sql, (steps) => this.plain(steps)) as unknown as PlainRelaySql;
  }

  /** The relay's tables in PostgreSQL at `databaseUrl` (schema `relay`), migrated; shared by every replica. */
  static async openPostgres(databaseUrl: string, options: PgRelayEngineOptions = {}): Promise<RelayStore> {
    // The engine tells the store's cache listeners of another replica's commit; the store needs the engine first.
    const opened: { store?: RelayStore } = {};
    const engine = await PgRelayEngine.open(databaseUrl, () => opened.store?.invalidateCaches(), options);
    opened.store = new RelayStore(null, engine);
    return opened.store;
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
   * Runs `steps` (a rule, or a function making one) as plain statements, each write committed on
   * its own: reads, and writes that need no transaction. On SQLite they have run when this returns.
   */
  plain<T>(steps: Steps<T> | (() => Steps<T>)): Promise<T> {
    if (this.pg) return this.pg.plain(typeof steps === 'function' ? steps : () => steps);
    try {
      return Promise.resolve((this.sqliteSteps as SqliteRelayExecutor).run(typeof steps === 'function' ? steps() : steps));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  /**
   * `plain` for reads no cache depends on and nothing must wait behind (`/metrics`): on PostgreSQL
   * beside the replica's queue of rules (decision 0700), so a vote never waits for a scrape; on
   * SQLite `plain` (one connection, on the event loop: keep such reads cheap).
   */
  readBeside<T>(steps: Steps<T> | (() => Steps<T>)): Promise<T> {
    if (this.pg) return this.pg.readBeside(typeof steps === 'function' ? steps : () => steps);
    return this.plain(steps);
  }

  /**
   * Runs `steps` in one write transaction: the change and its event commit together or not at all.
   * Settles after the commit (on SQLite, before this returns). Inside, `savepoint` nests one.
   */
  tx<T>(steps: Steps<T> | (() => Steps<T>)): Promise<T> {
    const make = typeof steps === 'function' ? steps : () => steps;
    if (this.pg) {
      return this.pg.tx(make).then(
        (result) => {
          this.committed++;
          return result;
        },
        (err: unknown) => {
          // Whatever the steps wrote is gone: in-memory views of those rows must forget them.
          this.invalidateCaches();
          throw err;
        },
      );
    }
    try {
      const executor = this.sqliteSteps as SqliteRelayExecutor;
      const result = (this.immediateTx as (fn: () => unknown) => unknown)(() => executor.run(make())) as T;
      this.noteCommit();
      return Promise.resolve(result);
    } catch (err) {
      this.invalidateCaches();
      return Promise.reject(err as Error);
    }
  }

  /**
   * A nested transaction, as a step of the transaction around it: `steps` commit with it or, when
   * they throw, only their own writes are undone (the vote group commit relies on it).
   */
  *savepoint<T>(steps: () => Steps<T>): Steps<T> {
    if (!this.inTransaction) throw new Error('RelayStore.savepoint outside a transaction: call it inside tx');
    const name = `relay_sp_${++this.savepoints}`;
    try {
      yield { kind: 'script', sql: `SAVEPOINT ${name}`, params: [] };
      let result: T;
      try {
        result = yield* steps();
      } catch (err) {
        // Some errors (SQLITE_FULL, an I/O error) end the whole transaction, savepoints and all:
        // then there is nothing to roll back to, and the caller must end the transaction too
        // (`inTransaction` tells it), or its next statement would start one of its own.
        if (!this.inTransaction) throw err;
        yield { kind: 'script', sql: `ROLLBACK TO SAVEPOINT ${name}`, params: [] };
        yield { kind: 'script', sql: `RELEASE SAVEPOINT ${name}`, params: [] };
        // A rolled back savepoint's rows may be in caches filled inside it: telling the listeners
        // too often only costs them a reload.
        this.invalidateCaches();
        throw err;
      }
      yield { kind: 'script', sql: `RELEASE SAVEPOINT ${name}`, params: [] };
      return result;
    } finally {
      this.savepoints--;
    }
  }

  /** Whether a transaction is open on the store's connection (inside `tx`'s steps: whether it still is). */
  get inTransaction(): boolean {
    return this.pg ? this.pg.inTransaction : this.db.inTransaction;
  }

  private noteCommit(): void {
    this.committed++;
    this.walSync?.noteCommit();
    this.checkpointer?.noteCommit();
  }

  /**
   * Write transactions this process committed since the store opened: the ingest bench reports
   * them per accepted vote, `/metrics` as `hilbench_relay_write_transactions_total`. On SQLite a
   * write outside `tx` counts as one; on PostgreSQL only `tx`s count (plain writes commit there
   * on their own, unseen by the store).
   */
  get commits(): number {
    return this.committed;
  }

  /** SQLite: fdatasyncs of the WAL completed since the store opened (decision 0480); null on PostgreSQL, which syncs its own commits. */
  get walSyncs(): number | null {
    return this.walSync ? this.walSync.syncs : null;
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

  /**
   * Calls `listener` whenever rows held in memory may no longer be the database's: a `tx` or a
   * savepoint rolled back (caches filled inside it may hold rows never committed; see Voting's slice
   * cache), or, on PostgreSQL, another replica committed since this one last looked (see `refresh`).
   */
  onCachesInvalid(listener: () => void): void {
    this.invalidationListeners.push(listener);
  }

  /**
   * On PostgreSQL, looks whether another replica committed since this one last did or looked, and
   * if so tells the `onCachesInvalid` listeners; call before serving a request from caches. A write
   * transaction does the same under the write lock. SQLite has one writer, this process: null, nothing to wait for.
   */
  refresh(): Promise<void> | null {
    return this.pg ? this.pg.refresh() : null;
  }

  /** A 32-byte secret by name: a file in the data dir on SQLite, a row shared by every replica on PostgreSQL. */
  async loadOrCreateSecret(name: string): Promise<Buffer> {
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
   * Appends an event, a step of the transaction that makes the change. `author` is the node the
   * event is about or by (the `authors` filter), `payload` is what a peer needs to verify it.
   */
  *appendEvent(kind: EventKind, author: string, subject: string, payload: unknown, nowMs: number, origin: string | null = null): Steps<number> {
    return yield* this.appendEventJson(kind, author, subject, JSON.stringify(payload), nowMs, origin);
  }

  /** `appendEvent` with the payload already serialised (`JSON.stringify` of it), for a caller that has the text. */
  *appendEventJson(kind: EventKind, author: string, subject: string, payloadJson: string, nowMs: number, origin: string | null = null): Steps<number> {
    this.requireEventTransaction(`appendEvent(${kind})`);
    return yield* this.data.events.append({ kind, author, subject, payloadJson, origin, nowMs });
  }

  /**
   * Outside `tx` an event would be committed without the write lock: on PostgreSQL another
   * replica's event could then commit with a smaller seq after it, and a reader would skip it.
   */
  private requireEventTransaction(call: string): void {
    if (!this.inTransaction) throw new Error(`RelayStore.${call} outside a transaction: call it inside tx`);
  }

  /**
   * Appends the `vote` event of a statement's first document (`documentJson`), just stored in
   * `votes` in this transaction: the event names the statement, and on SQLite holds no copy of its
   * text (decision 1170). On PostgreSQL it still holds one: during a rolling upgrade
   * (docs/deployment.md) replicas of the previous release serve `GET /events` from the payload, and
   * an empty one would break their pages. A later release can stop writing it there, and empty the
   * payloads of the events that name their statement.
   */
  *appendVoteEvent(vote: { voter: string; item: string; value: string; phase: string }, documentJson: string, nowMs: number, origin: string | null): Steps<void> {
    this.requireEventTransaction('appendVoteEvent');
    const payloadJson = this.pg ? votePayloadJson(documentJson) : '';
    yield* this.data.events.appendVote({ voter: vote.voter, item: vote.item, value: vote.value, phase: vote.phase, payloadJson, origin, nowMs });
  }

  /** Closes the database (on PostgreSQL after the rules already queued). */
  async close(): Promise<void> {
    if (this.pg) await this.pg.close();
    else if (this.sqlite?.open) {
      // The thread's connection first: the store's, closing last, checkpoints the WAL into the file.
      const stopping = this.checkpointer?.close();
      if (stopping) await stopping;
      // Another close may have finished while this one waited for the thread.
      if (!this.sqlite.open) return;
      this.sqlite.close();
      this.walSync?.close();
    }
  }
}

export interface SqliteRelayStoreOptions {
  /** How and when the WAL file is made durable (decision 0480); fdatasync on the thread pool by default. */
  wal?: WalSyncOptions;
  /** When the WAL is checkpointed, off the event loop (decision 0760). */
  checkpoints?: WalCheckpointerOptions;
}

export type { EventKind };
