import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { type Clock, systemClock } from '../../../core/clock.js';
import type { SharedFileContents } from './shared-file-contents.js';
import { PgFaultGuard, withCheckedOutClient } from '../postgres/pg-faults.js';
import { openPgPool, redactDatabaseUrl } from '../postgres/pg-pool.js';
import { runSteps, type Statement, type Steps } from '../sql-steps.js';
import { migrateRelaySchema } from './pg-relay-migrations.js';
import { LOCK_TIMEOUT_MS, RELAY_WRITE_LOCK_KEY, performRelayStatement, type RelayQuery } from './pg-relay-sql.js';
import { RelaySql } from './relay-sql.js';

export { RELAY_WRITE_LOCK_KEY };

/**
 * Connections of a replica's relay pool by default. Its rules run one at a time (`exclusive`), so
 * one connection is busy at a time; the second lets a dropped one be replaced while it closes.
 */
export const DEFAULT_RELAY_POOL_SIZE = 2;

export interface PgRelayEngineOptions {
  /** Connections of the pool (1 to 100); default `DEFAULT_RELAY_POOL_SIZE`. */
  poolSize?: number;
  /** Host time for the reconnect backoff; default the system clock. */
  clock?: Clock;
}

/**
 * The relay's steps on PostgreSQL (decisions 0610, 0700), on a `pg.Pool`: every statement is
 * awaited, so the replica's event loop never waits for the database (decision 0440's engine
 * blocked its thread on a worker for each statement).
 *
 * The relay's caches (slice book, statement log, the relay node's tallies) are filled and changed
 * by its rules as they run, so a replica runs its rules one at a time (`exclusive`, a queue): no
 * request sees another's uncommitted writes in them, and nothing runs between a vote's checks and
 * its writes, as when every statement waited synchronously. Across replicas, each write
 * transaction takes the write lock, then bumps the write generation: when the generation it found
 * is not the one this replica last saw, another replica committed in between and the caches are
 * dropped before the transaction reads anything (decision 0441).
 *
 * A database restart is a fault it survives (decision 0516), as the bench's engine does, with the
 * same code (server/storage/postgres, decision 0790): the pool (`openPgPool`) and each checked-out
 * connection (`withCheckedOutClient`) handle their `error` events, a connection that failed is
 * dropped from the pool, and `PgFaultGuard` fails each rule at once with `DatabaseUnavailableError`
 * (503 with `Retry-After`) while the database is away, until the next try of a bounded backoff;
 * the database's full disk (53100) is a `StorageFullError` (507).
 */
export class PgRelayEngine {
  /** The relay's statements, as steps `plain` and `tx` run. */
  readonly sql = new RelaySql('postgres');
  private depth = 0;
  /** The write generation this replica's caches match; undefined: unknown (they are dropped at the next look). */
  private seenGeneration: number | undefined;
  /** The end of the queue of rules: the next one starts when it settles. */
  private tail: Promise<unknown> = Promise.resolve();
  private closing: Promise<void> | undefined;
  /** A `refresh` queued whose look has not begun: later callers share it (see `refresh`). */
  private queuedRefresh: Promise<void> | undefined;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly faults: PgFaultGuard,
    private readonly invalidateCaches: () => void,
    private readonly label: string,
  ) {}

  /** Connects to the relay's tables at `databaseUrl` (schema `relay`), migrated first; `invalidateCaches` hears of another replica's commit. */
  static async open(databaseUrl: string, invalidateCaches: () => void, options: PgRelayEngineOptions = {}): Promise<PgRelayEngine> {
    const label = `the relay database at ${redactDatabaseUrl(databaseUrl)}`;
    const pool = openPgPool(databaseUrl, {
      poolSize: options.poolSize ?? DEFAULT_RELAY_POOL_SIZE,
      what: 'the relay database pool',
      config: {
        // The relay's tables live in their own schema, beside the bench's.
        options: `-c search_path=relay -c lock_timeout=${LOCK_TIMEOUT_MS}`,
        // A database host gone silent (no FIN, no RST) is noticed by TCP instead of by the statement timeout alone.
        keepAlive: true,
      },
    });
    const engine = new PgRelayEngine(pool, new PgFaultGuard(options.clock ?? systemClock, label), invalidateCaches, label);
    try {
      await engine.onConnection((query) => migrateRelaySchema(query));
    } catch (err) {
      await pool.end();
      throw err;
    }
    return engine;
  }

  /** Whether a transaction's steps are running now (the queue runs one rule at a time). */
  get inTransaction(): boolean {
    return this.depth > 0;
  }

  /** Whether the database failed to answer since it last did. */
  get away(): boolean {
    return this.faults.away;
  }

  /** Runs `steps` as plain statements, each committed on its own, after the rules queued before. */
  plain<T>(steps: () => Steps<T>): Promise<T> {
    return this.exclusive(() => this.faults.run(() => runSteps(steps(), (statement) => performRelayStatement(this.pool, statement))));
  }

  /**
   * Runs `steps` as plain reads beside the queue of rules, on whichever connection of the pool is
   * free: for reads that no cache depends on and that no rule must wait behind (the counts of the
   * relay's `/metrics`, decision 1060: a COUNT(*) of 100 000 rows takes the database about 18 ms).
   */
  readBeside<T>(steps: () => Steps<T>): Promise<T> {
    if (this.closing) return Promise.reject(new Error(`${this.label} is closed`));
    return this.faults.run(() => runSteps(steps(), (statement) => performRelayStatement(this.pool, statement)));
  }

  /**
   * Runs `steps` in one transaction under the write lock, after the rules queued before; settles
   * after its commit. A nested transaction is a savepoint the steps take (`RelayStore.savepoint`).
   */
  tx<T>(steps: () => Steps<T>): Promise<T> {
    return this.exclusive(() =>
      this.faults.run(() =>
        this.onConnection(async (query) => {
          await query(script('BEGIN'));
          this.depth = 1;
          try {
            await query({ kind: 'one', sql: 'SELECT pg_advisory_xact_lock(?)', params: [RELAY_WRITE_LOCK_KEY] });
            const row = (await query({ kind: 'one', sql: 'UPDATE write_generation SET generation = generation + 1 RETURNING generation', params: [] })) as { generation: number | string };
            const generation = Number(row.generation);
            if (generation - 1 !== this.seenGeneration) this.invalidateCaches();
            const result = await runSteps(steps(), query);
            await query(script('COMMIT'));
            this.seenGeneration = generation;
            return result;
          } catch (err) {
            this.seenGeneration = undefined;
            // On a lost connection PostgreSQL rolled the transaction back itself (and `onConnection` drops it).
            await query(script('ROLLBACK')).catch(() => undefined);
            throw err;
          } finally {
            this.depth = 0;
          }
        }),
      ),
    );
  }

  /**
   * Looks whether another replica committed since this one last did or looked, and if so drops the
   * caches (decision 0441); call before serving a request from caches.
   */
  refresh(): Promise<void> {
    // Requests that arrive while a look is queued and not yet begun share it: it reads the
    // generation after each of them arrived, so it sees every commit made before any of them did.
    // Each request queued a look of its own before (a review low), so one burst of requests read
    // the generation once per request, one after the other in the queue.
    if (this.queuedRefresh) return this.queuedRefresh;
    const refresh = this.exclusive(() => {
      // From here on a new arrival may come after the generation is read: it queues its own look.
      this.queuedRefresh = undefined;
      return this.faults.run(async () => {
        const row = (await performRelayStatement(this.pool, { kind: 'one', sql: 'SELECT generation FROM write_generation', params: [] })) as { generation: number | string } | undefined;
        const generation = Number(row?.generation);
        if (generation !== this.seenGeneration) {
          this.invalidateCaches();
          this.seenGeneration = generation;
        }
      });
    });
    // A closed engine refuses at once (nothing queued): every later call is refused the same way.
    this.queuedRefresh = refresh;
    return refresh;
  }

  /** The secret `name`, created by the first replica that asks (under the write lock, so all agree). */
  async loadOrCreateSecret(name: string): Promise<Buffer> {
    const sql = this.sql;
    const read = () => sql.value<string>('SELECT hex FROM relay_secrets WHERE name = ?', name);
    const hex =
      (await this.plain(read)) ??
      (await this.tx(function* () {
        yield* sql.run('INSERT INTO relay_secrets (name, hex) VALUES (?, ?) ON CONFLICT DO NOTHING', name, randomBytes(32).toString('hex'));
        return yield* read();
      }));
    if (hex === undefined || !/^[0-9a-f]{64}$/.test(hex)) throw new Error(`the relay secret ${name} in PostgreSQL is not 64 hex characters; refusing to start with a damaged key`);
    return Buffer.from(hex, 'hex');
  }

  /** File contents in `relay_files`, for every replica's FileStore. */
  readonly files: SharedFileContents = {
    has: async (itemId) => (await this.plain(() => this.sql.value<number>('SELECT 1 AS present FROM relay_files WHERE item_id = ?', itemId))) !== undefined,
    // One statement, no write lock: a file's row is its content-addressed bytes, the same whoever writes it first.
    put: async (itemId, content) => {
      await this.plain(() => this.sql.run('INSERT INTO relay_files (item_id, content) VALUES (?, ?) ON CONFLICT DO NOTHING', itemId, content));
    },
    get: async (itemId) => {
      const content = await this.plain(() => this.sql.value<Uint8Array>('SELECT content FROM relay_files WHERE item_id = ?', itemId));
      return content === undefined ? undefined : Buffer.from(content.buffer, content.byteOffset, content.byteLength);
    },
  };

  /** Ends the pool after the rules already queued: a closing replica answers what it took. */
  close(): Promise<void> {
    this.closing ??= this.exclusive(() => this.pool.end());
    return this.closing;
  }

  /** Runs `fn` once every rule queued before it settled; rules queued while it runs wait for it. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.closing) return Promise.reject(new Error(`${this.label} is closed`));
    const result = this.tail.then(fn);
    this.tail = result.catch(() => undefined);
    return result;
  }

  /** `body` with statements on one connection of the pool; a connection that failed is dropped, never reused. */
  private onConnection<T>(body: (query: RelayQuery) => Promise<T>): Promise<T> {
    return withCheckedOutClient(this.pool, (connection) => body((statement) => connection.send((client) => performRelayStatement(client, statement))));
  }
}

function script(sql: string): Statement {
  return { kind: 'script', sql, params: [] };
}
