import { randomBytes } from 'node:crypto';
import type { SharedFileContents } from '../../relay/domain/file-store.js';
// The PostgreSQL opener (pool, reconnect with backoff, storage faults) serves both services but still
// lives with the bench's store; moving it to server/storage's top is left (decision 0676).
// eslint-disable-next-line no-restricted-imports
import { pgConnection, redactDatabaseUrl } from '../bench/postgres/pg-database.js';
import { migrateRelaySchema } from './pg-relay-migrations.js';
import { PgRelaySteps } from './pg-relay-sql.js';
import { PgSyncConnection } from './pg-sync-connection.js';
import { RelaySql } from './relay-sql.js';

/**
 * The one advisory lock every relay write transaction takes, on every replica: writes run one at a
 * time, so an event's seq order is its commit order and a check and the write depending on it are
 * one step (decision 0440). Not the bench's key (0353): the bench's writes never wait for the relay's.
 */
export const RELAY_WRITE_LOCK_KEY = 0x72656c79; // 'rely'

/** A statement (a lock wait included) that takes longer than this fails instead of stopping the replica. */
const STATEMENT_TIMEOUT_MS = 30_000;

/**
 * Transactions, secrets and the write generation of the relay's PostgreSQL store, on one
 * synchronous connection. Each write transaction takes the write lock, then bumps the write
 * generation: when the generation it found is not the one this replica last saw, another replica
 * committed in between and the caches are dropped before the transaction reads anything (decision 0441).
 */
export class PgRelayEngine {
  readonly connection: PgSyncConnection;
  readonly steps: PgRelaySteps;
  /** The relay's statements, as steps `steps` runs. */
  readonly sql = new RelaySql('postgres');
  private depth = 0;
  /** The write generation this replica's caches match; undefined: unknown (they are dropped at the next look). */
  private seenGeneration: number | undefined;

  constructor(
    databaseUrl: string,
    private readonly invalidateCaches: () => void,
  ) {
    this.connection = new PgSyncConnection(
      // The relay's tables live in their own schema, beside the bench's.
      { ...pgConnection(databaseUrl), options: `-c search_path=relay -c lock_timeout=${STATEMENT_TIMEOUT_MS}` },
      { statementTimeoutMs: STATEMENT_TIMEOUT_MS + 5_000, label: `the relay database at ${redactDatabaseUrl(databaseUrl)}` },
    );
    try {
      migrateRelaySchema(this.connection);
    } catch (err) {
      this.connection.close();
      throw err;
    }
    this.steps = new PgRelaySteps(this.connection);
  }

  get inTransaction(): boolean {
    return this.depth > 0;
  }

  tx<T>(fn: () => T): T {
    const q = (sql: string, params?: unknown[]) => this.connection.query(sql, params);
    if (this.depth > 0) {
      // Nested: a savepoint, as better-sqlite3 nests transactions (the vote group commit relies on it).
      const name = `relay_sp_${this.depth}`;
      q(`SAVEPOINT ${name}`);
      this.depth++;
      try {
        const result = fn();
        q(`RELEASE SAVEPOINT ${name}`);
        return result;
      } catch (err) {
        q(`ROLLBACK TO SAVEPOINT ${name}`);
        q(`RELEASE SAVEPOINT ${name}`);
        throw err;
      } finally {
        this.depth--;
      }
    }
    q('BEGIN');
    this.depth = 1;
    try {
      q('SELECT pg_advisory_xact_lock($1)', [RELAY_WRITE_LOCK_KEY]);
      const generation = Number(q('UPDATE write_generation SET generation = generation + 1 RETURNING generation').rows[0]?.generation);
      if (generation - 1 !== this.seenGeneration) this.invalidateCaches();
      const result = fn();
      if (result instanceof Promise) throw new TypeError('RelayStore.tx takes a synchronous function: a transaction never yields');
      q('COMMIT');
      this.seenGeneration = generation;
      return result;
    } catch (err) {
      this.seenGeneration = undefined;
      try {
        q('ROLLBACK');
      } catch {
        // The connection is gone: PostgreSQL rolled the transaction back itself.
      }
      throw err;
    } finally {
      this.depth = 0;
    }
  }

  refresh(): void {
    if (this.depth > 0) return;
    const generation = Number(this.connection.query('SELECT generation FROM write_generation').rows[0]?.generation);
    if (generation !== this.seenGeneration) {
      this.invalidateCaches();
      this.seenGeneration = generation;
    }
  }

  /** The secret `name`, created by the first replica that asks (under the write lock, so all agree). */
  loadOrCreateSecret(name: string): Buffer {
    const read = () => this.steps.run(this.sql.value<string>('SELECT hex FROM relay_secrets WHERE name = ?', name));
    const hex = read() ?? this.tx(() => {
      this.steps.run(this.sql.run('INSERT INTO relay_secrets (name, hex) VALUES (?, ?) ON CONFLICT DO NOTHING', name, randomBytes(32).toString('hex')));
      return read();
    });
    if (hex === undefined || !/^[0-9a-f]{64}$/.test(hex)) throw new Error(`the relay secret ${name} in PostgreSQL is not 64 hex characters; refusing to start with a damaged key`);
    return Buffer.from(hex, 'hex');
  }

  /** File contents in `relay_files`, for every replica's FileStore. */
  readonly files: SharedFileContents = {
    has: (itemId) => this.steps.run(this.sql.get('SELECT 1 AS present FROM relay_files WHERE item_id = ?', itemId)) !== undefined,
    // One statement, no write lock: a file's row is its content-addressed bytes, the same whoever writes it first.
    put: (itemId, content) => void this.steps.run(this.sql.run('INSERT INTO relay_files (item_id, content) VALUES (?, ?) ON CONFLICT DO NOTHING', itemId, content)),
    get: (itemId) => {
      const content = this.steps.run(this.sql.value<Uint8Array>('SELECT content FROM relay_files WHERE item_id = ?', itemId));
      return content === undefined ? undefined : Buffer.from(content.buffer, content.byteOffset, content.byteLength);
    },
  };

  close(): void {
    this.connection.close();
  }
}
