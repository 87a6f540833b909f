import Database from 'better-sqlite3';
import { join } from 'node:path';
import { runMigrations } from '../db/run-migrations.js';
import { ensurePrivateDir, prepareOwnerOnlyDatabase } from '../lifecycle/private-files.js';
import type { EventKind } from './data-access/event-repository.js';
import { RelayData } from './data-access/relay-data.js';
import { relayMigrations } from './data-access/relay-migrations.js';
import { PreparedStatements } from './data-access/prepared-statements.js';

/**
 * The relay's embedded SQLite store (`relay.sqlite` in the data dir). One connection, used
 * synchronously: SQLite serialises writers and better-sqlite3 never yields inside a
 * transaction, so an event's rowid order is its commit order. That is what lets GET /events
 * page by `seq > since` with no gap and no duplicate while other requests write.
 */
export class RelayStore {
  readonly db: Database.Database;
  /** Every query of the relay, as typed repository calls (decision 0312). */
  readonly data: RelayData;

  constructor(readonly dataDir: string) {
    // Phone numbers and credentials: the folder 0700, the database (and so its -wal/-shm) 0600.
    ensurePrivateDir(dataDir);
    prepareOwnerOnlyDatabase(join(dataDir, 'relay.sqlite'));
    this.db = new Database(join(dataDir, 'relay.sqlite'));
    this.db.pragma('journal_mode = WAL');
    // Every commit synced: an accepted vote or registration survives a power cut, not only a crash
    // of the process (concurrent votes share one sync: server/relay/vote-ingest.ts).
    this.db.pragma('synchronous = FULL');
    this.db.pragma('foreign_keys = ON');
    this.db.pragma('busy_timeout = 5000');
    runMigrations(this.db, relayMigrations, { label: 'the relay database' });
    // One statement cache for all: the store has one connection.
    this.data = new RelayData(new PreparedStatements(this.db));
  }

  private readonly rollbackListeners: (() => void)[] = [];

  /** Runs `fn` in one immediate transaction; the change and its event commit together or not at all. */
  tx<T>(fn: () => T): T {
    try {
      return this.db.transaction(fn).immediate();
    } catch (err) {
      // Whatever `fn` wrote is gone (a nested call only rolls back its savepoint, but telling the
      // listeners too often only costs them a reload): in-memory views of those rows must forget them.
      for (const listener of this.rollbackListeners) listener();
      throw err;
    }
  }

  /**
   * Calls `listener` whenever a `tx` rolls back, so caches filled inside a transaction never keep
   * rows that were not committed (see Voting's slice cache).
   */
  onRollback(listener: () => void): void {
    this.rollbackListeners.push(listener);
  }

  /**
   * Appends an event; call inside the transaction that makes the change. `author` is the node
   * the event is about or by (the `authors` filter), `payload` is what a peer needs to verify it.
   */
  appendEvent(kind: EventKind, author: string, subject: string, payload: unknown, nowMs: number, origin: string | null = null): number {
    return this.data.events.append({ kind, author, subject, payloadJson: JSON.stringify(payload), origin, nowMs });
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

export type { EventKind };
