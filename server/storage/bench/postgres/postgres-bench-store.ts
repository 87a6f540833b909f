import type { Clock } from '../../../../core/clock.js';
import { SqlBenchStore } from '../sql-bench-store.js';
import { SqlFirmwareBlobs } from '../sql-side-stores.js';
import { PgDatabase } from './pg-database.js';
import { PgExecutor } from './pg-executor.js';
import { migratePgBenchDatabase } from './pg-migrations.js';
import { PgSessionQueue } from './pg-session-queue.js';

/**
 * The bench store on PostgreSQL, for server replicas (issue 10, decision 0353): every replica
 * opens one on the same database. The rules are the shared ones (`SqlBenchStore`, decision 0545),
 * run by `PgExecutor` on a connection pool; there is no global write lock (decision 0515): row
 * locks, unique indexes and per-board advisory locks decide a lease, a claim or a session's expiry
 * once across replicas, and writes on different boards run at once.
 */
export class PostgresBenchStore extends SqlBenchStore {
  /** Firmware in the database, shared by every replica (the service uses it instead of files). */
  readonly firmware: SqlFirmwareBlobs;

  /** The session queue across replicas (decision 0555), woken by LISTEN/NOTIFY. */
  readonly sessionQueue: PgSessionQueue;

  private constructor(
    readonly db: PgDatabase,
    clock?: Clock,
  ) {
    const sql = new PgExecutor(db);
    super(sql);
    this.firmware = new SqlFirmwareBlobs(sql);
    this.sessionQueue = new PgSessionQueue(db, clock);
  }

  override async close(): Promise<void> {
    await this.sessionQueue.close();
    await super.close();
  }

  /** Connects and brings the schema up to date (replicas starting together take turns). */
  static async open(databaseUrl: string, options: { poolSize?: number; clock?: Clock } = {}): Promise<PostgresBenchStore> {
    const db = new PgDatabase(databaseUrl, options);
    try {
      await migratePgBenchDatabase(db);
    } catch (err) {
      await db.close();
      throw err;
    }
    return new PostgresBenchStore(db, options.clock);
  }
}
