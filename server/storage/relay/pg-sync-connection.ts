import { createRequire } from 'node:module';
import { MessageChannel, type MessagePort, Worker, receiveMessageOnPort } from 'node:worker_threads';
import type pg from 'pg';
import { type Clock, systemClock } from '../../../core/clock.js';
import { ReconnectBackoff } from '../reconnect-backoff.js';
import { DatabaseUnavailableError, isDatabaseConnectionFault, isDiskFull, StorageFullError } from '../storage-faults.js';

/** What one statement gave back. */
export interface PgResult {
  rows: Record<string, unknown>[];
  /** Rows a write changed (INSERT, UPDATE, DELETE); 0 for other statements. */
  rowCount: number;
}

/** A statement PostgreSQL refused; `code` is its SQLSTATE (e.g. 23505, a unique violation). */
export class PgStatementError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'PgStatementError';
  }
}

/**
 * The worker: one `pg` client, one statement at a time, answering on the port and waking the
 * caller through the shared flag. CommonJS text (an eval'd worker runs no TypeScript); it loads `pg`
 * from the path the caller resolved, so it finds the same package wherever hilbench is installed.
 * A connection that failed is dropped and the next statement opens a new one (a transaction it was
 * in is gone: PostgreSQL rolled it back and released its locks). Every failure is an answer: the
 * caller's thread is blocked and would otherwise only learn of it at its timeout.
 */
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
let pg;
let loadError;
try {
  pg = require(workerData.pgPath);
  pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
  pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value) => Number(value));
} catch (err) {
  loadError = err;
}
const flag = new Int32Array(workerData.flag);
const port = workerData.port;
let client;
async function connection() {
  if (!client) {
    const c = new pg.Client(workerData.connection);
    c.on('error', () => { if (client === c) client = undefined; });
    client = c;
    try { await c.connect(); } catch (err) { client = undefined; throw err; }
  }
  return client;
}
port.on('message', async (message) => {
  let reply;
  try {
    if (loadError) throw loadError;
    if (message.end) { if (client) await client.end().catch(() => undefined); reply = { rows: [], rowCount: 0 }; }
    else {
      const c = await connection();
      const result = await c.query(message.sql, message.params);
      reply = { rows: result.rows, rowCount: result.rowCount || 0 };
    }
  } catch (err) {
    reply = { error: String(err && err.message || err), code: err && err.code };
    if (!err || !err.code || String(err.code).startsWith('08') || String(err.code).startsWith('57P')) {
      const c = client; client = undefined; if (c) c.end().catch(() => undefined);
    }
  }
  port.postMessage(reply);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
});
`;

/** The worker thread holding the connection, its port and the flag it wakes the caller with. */
interface ConnectionThread {
  worker: Worker;
  port: MessagePort;
  flag: Int32Array;
}

/** Pauses between tries while the database is away (decision 0516): from a quarter second, doubling, at most 5 s. */
const RECONNECT_FIRST_MS = 250;
const RECONNECT_MAX_MS = 5_000;

/**
 * A synchronous connection to PostgreSQL (decision 0440): statements run on a `pg` client in a
 * worker thread while the calling thread waits on a shared flag (`Atomics.wait`), so the relay's
 * synchronous data access and its `tx(() => ...)` work unchanged on PostgreSQL. The caller's event
 * loop stands still for each statement, as it does for each better-sqlite3 statement; a replica
 * serves one statement at a time and more replicas serve more.
 *
 * A database restart is a fault it survives (decision 0516): the thread opens a new connection
 * for the next statement; while the database is away statements fail at once with
 * `DatabaseUnavailableError` (503) until the next try of a bounded backoff; a statement that got no
 * answer in time gets a new thread. A transaction whose connection was lost stays failed until its
 * ROLLBACK, so none of its later statements runs outside it on the new connection.
 */
export class PgSyncConnection {
  private thread: ConnectionThread | undefined;
  private closed = false;
  private readonly backoff: ReconnectBackoff;
  private inTransaction = false;
  private transactionLost = false;

  constructor(
    private readonly connection: pg.ClientConfig,
    private readonly options: { statementTimeoutMs: number; label: string; clock?: Clock },
  ) {
    this.backoff = new ReconnectBackoff(options.clock ?? systemClock, { firstMs: RECONNECT_FIRST_MS, maxMs: RECONNECT_MAX_MS, what: options.label });
    this.thread = this.startThread();
  }

  private startThread(): ConnectionThread {
    const { port1, port2 } = new MessageChannel();
    const flag = new SharedArrayBuffer(4);
    const pgPath = createRequire(import.meta.url).resolve('pg');
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { pgPath, port: port2, flag, connection: this.connection }, transferList: [port2] });
    // Neither the thread nor its port keeps the process alive: `close` ends them, and a process that
    // is done must be able to exit without it.
    worker.unref();
    port1.unref();
    return { worker, port: port1, flag: new Int32Array(flag) };
  }

  /** Whether the database failed to answer since it last did. */
  get away(): boolean {
    return this.backoff.away;
  }

  /**
   * Runs one statement (`$1`, `$2`... parameters) and waits for its answer, at most `timeoutMs`
   * (default: the connection's `statementTimeoutMs`; longer for a migration that builds an index).
   */
  query(sql: string, params: readonly unknown[] = [], options: { timeoutMs?: number } = {}): PgResult {
    if (this.closed) throw new Error(`${this.options.label} is closed`);
    const verb = /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase();
    if (this.transactionLost) {
      if (verb !== 'ROLLBACK') throw new DatabaseUnavailableError(`${this.options.label}: the connection of this transaction was lost; it was rolled back`, 1);
      // PostgreSQL rolled it back when the connection went: nothing to send.
      this.transactionLost = false;
      this.inTransaction = false;
      return { rows: [], rowCount: 0 };
    }
    this.backoff.check();
    try {
      const result = this.exchange({ sql, params }, sql, options.timeoutMs);
      this.backoff.succeeded();
      if (verb === 'BEGIN') this.inTransaction = true;
      if (verb === 'COMMIT' || verb === 'ROLLBACK') this.inTransaction = false;
      return result;
    } catch (err) {
      if (!isDatabaseConnectionFault(err)) {
        this.backoff.succeeded();
        if (isDiskFull(err)) throw new StorageFullError(`${this.options.label}: the database's disk is full (${(err as Error).message})`, 60, { cause: err });
        throw err;
      }
      if (this.inTransaction && verb !== 'COMMIT' && verb !== 'ROLLBACK') this.transactionLost = true;
      this.inTransaction = false;
      throw this.backoff.failed(err);
    }
  }

  private exchange(message: unknown, what: string, timeoutMs = this.options.statementTimeoutMs): PgResult {
    const thread = (this.thread ??= this.startThread());
    Atomics.store(thread.flag, 0, 0);
    thread.port.postMessage(message);
    const waited = Atomics.wait(thread.flag, 0, 0, timeoutMs);
    const answer = receiveMessageOnPort(thread.port)?.message as (PgResult & { error?: undefined }) | { error: string; code?: string } | undefined;
    if (waited === 'timed-out' || answer === undefined) {
      // The worker may still answer later, out of step with the next statement: the next one gets a new thread.
      this.stopThread();
      throw new DatabaseUnavailableError(`${this.options.label}: no answer from PostgreSQL within ${timeoutMs} ms to ${what.slice(0, 80)}`, 1);
    }
    if (answer.error !== undefined) throw new PgStatementError(`${this.options.label}: ${answer.error}`, answer.code);
    return answer;
  }

  /** Ends the database connection and the worker thread. */
  close(): void {
    if (this.closed) return;
    try {
      if (this.thread) this.exchange({ end: true }, 'closing the connection', Math.min(this.options.statementTimeoutMs, 5_000));
    } catch {
      // Closing anyway: the worker goes with the connection it holds.
    }
    this.closed = true;
    this.stopThread();
  }

  private stopThread(): void {
    const thread = this.thread;
    this.thread = undefined;
    if (!thread) return;
    thread.port.close();
    void thread.worker.terminate();
  }
}
