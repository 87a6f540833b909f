/**
 * How many PostgreSQL connections a bench replica's store opens (`--database-pool-size`), apart
 * from pg itself so that the command line can name the bounds without loading the driver.
 */

/** The default: enough for a replica's writes to overlap on a small machine. */
export const DEFAULT_DATABASE_POOL_SIZE = 10;
/** The bound: PostgreSQL's default `max_connections` is 100 for every replica together. */
export const MAX_DATABASE_POOL_SIZE = 100;
