import Database from 'better-sqlite3';
import { latestVersion } from '../run-migrations.js';
import { prepareOwnerOnlyDatabase } from '../../lifecycle/private-files.js';
import { benchStoreMigrations, migrateBenchDatabase } from './bench-store-migrations.js';
import { SqlBenchStore } from './sql-bench-store.js';
import { SqliteExecutor } from './sql/sqlite-executor.js';
import { SqliteSessionQueue } from './sqlite-session-queue.js';
import { WalCheckpointer } from '../wal-checkpointer.js';

/** The schema version this code writes; a database from a newer version is refused. */
export const SQLITE_SCHEMA_VERSION = latestVersion(benchStoreMigrations);

/**
 * The bench store on SQLite (better-sqlite3, WAL), the embedded default: one process owns the
 * file. The rules are the shared ones (`SqlBenchStore`, decision 0545), run synchronously by
 * `SqliteExecutor`; this class opens the file and brings its schema up to date.
 */
export class SqliteBenchStore extends SqlBenchStore {
  /** The open database. For this class and its tests only: the service sees `BenchStore`. */
  readonly database: Database.Database;
  /** The session queue (decision 0555): waiters woken in this process by the file's triggers. */
  readonly sessionQueue: SqliteSessionQueue;
  /** WAL checkpoints off the event loop (decision 0760). */
  readonly checkpointer: WalCheckpointer;

  constructor(file: string) {
    // Agents' token hashes and e-mails, the CSRF secret: 0600, and SQLite gives -wal/-shm the same mode.
    prepareOwnerOnlyDatabase(file);
    const database = new Database(file);
    database.pragma('journal_mode = WAL');
    // FULL: a commit is on disk before the response that reports it is sent.
    database.pragma('synchronous = FULL');
    database.pragma('foreign_keys = ON');
    database.pragma('busy_timeout = 5000');
    migrateBenchDatabase(database);
    const checkpointer = new WalCheckpointer(database);
    super(new SqliteExecutor(database, { afterWrite: () => checkpointer.noteCommit() }));
    this.checkpointer = checkpointer;
    this.database = database;
    this.sessionQueue = new SqliteSessionQueue(database);
  }

  override async close(): Promise<void> {
    // The thread's connection first: the store's, closing last, checkpoints the WAL into the file.
    const stopping = this.checkpointer.close();
    if (stopping) await stopping;
    await super.close();
  }
}
