import type pg from 'pg';
import type { Clock } from '../../../core/clock.js';
import { ReconnectBackoff } from '../reconnect-backoff.js';
import { isDatabaseConnectionFault, isDiskFull, StorageFullError } from '../storage-faults.js';

/** Pauses between tries while the database is away (decision 0516): from a quarter second, doubling, at most 5 s. */
const RECONNECT_FIRST_MS = 250;
const RECONNECT_MAX_MS = 5_000;
/** Freeing the database's disk takes an operator: a minute between tries (the 507's `Retry-After`). */
const DISK_FULL_RETRY_AFTER_SECONDS = 60;

/**
 * Both services' PostgreSQL engines' faults as the storage faults they are (decisions 0516, 0517,
 * 0790): a connection fault is a `DatabaseUnavailableError` (503 with `Retry-After`), and while the
 * database is away each call fails at once until the next try of a bounded backoff; the database's
 * full disk (53100) is a `StorageFullError` (507). Any other error passes unchanged.
 */
export class PgFaultGuard {
  private readonly backoff: ReconnectBackoff;

  /** `what`: the database in the words of an error, e.g. "the bench database". */
  constructor(
    clock: Clock,
    private readonly what: string,
  ) {
    this.backoff = new ReconnectBackoff(clock, { firstMs: RECONNECT_FIRST_MS, maxMs: RECONNECT_MAX_MS, what });
  }

  /** Whether the database failed to answer since it last did (`GET /api/v1/health`). */
  get away(): boolean {
    return this.backoff.away;
  }

  /** `fn` unless the database is away; its connection faults and full disk as storage faults. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    this.backoff.check();
    try {
      const result = await fn();
      this.backoff.succeeded();
      return result;
    } catch (err) {
      if (isDatabaseConnectionFault(err)) throw this.backoff.failed(err);
      // Anything else is not a lost connection: a statement's error (the database answered it) or
      // a refusal of our own code between statements. Neither says the database is away.
      this.backoff.succeeded();
      if (isDiskFull(err)) throw new StorageFullError(`${this.what} cannot store more: its disk is full (${(err as Error).message})`, DISK_FULL_RETRY_AFTER_SECONDS, { cause: err });
      throw err;
    }
  }
}

/** A connection checked out of the pool for a transaction or a migration (`withCheckedOutClient`). */
export interface CheckedOutClient {
  /**
   * Sends on the connection: `request` is called at once (so requests sent one after the other
   * without awaiting are pipelined in that order). Fails at once, sending nothing, once the
   * connection was lost, so no statement runs outside the transaction on a new connection.
   */
  send<R>(request: (client: pg.PoolClient) => Promise<R>): Promise<R>;
  /** The fault that lost the connection, if one did: then PostgreSQL has rolled back its transaction itself. */
  readonly lost: unknown;
}

/**
 * `body` on one connection checked out of `pool`, released when it settles (decision 0516). A
 * checked-out connection has no listener of the pool's: one ended between two statements (57P01 at
 * a restart) would be an unhandled `error` event, which ends the process, so it is listened to for
 * as long as it is out. A connection that failed is released with its fault, so the pool drops it
 * and never hands it out again. When the connection was lost and `body` failed with something
 * else (a statement refused on the dead connection), the loss is what it throws.
 */
export async function withCheckedOutClient<T>(pool: pg.Pool, body: (connection: CheckedOutClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let lost: unknown;
  const onError = (err: unknown) => {
    lost ??= err;
  };
  client.on('error', onError);
  const connection: CheckedOutClient = {
    send: async (request) => {
      if (lost !== undefined) throw lost;
      try {
        return await request(client);
      } catch (err) {
        if (isDatabaseConnectionFault(err)) lost ??= err;
        throw err;
      }
    },
    get lost() {
      return lost;
    },
  };
  try {
    return await body(connection);
  } catch (err) {
    if (isDatabaseConnectionFault(err)) lost ??= err;
    throw lost !== undefined && !isDatabaseConnectionFault(err) ? lost : err;
  } finally {
    client.off('error', onError);
    client.release(lost instanceof Error ? lost : lost === undefined ? undefined : new Error(String(lost)));
  }
}
