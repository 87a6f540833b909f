/**
 * How many PostgreSQL connections a replica's pools may open, apart from pg itself so that the
 * command line can name the bounds without loading the driver (`openPgPool` checks them).
 */

/** The bench store's default (`--database-pool-size`): enough for a replica's writes to overlap on a small machine. */
export const DEFAULT_DATABASE_POOL_SIZE = 10;
/** The bound of every pool, the bench's and the relay's: PostgreSQL's default `max_connections` is 100 for every replica together. */
export const MAX_DATABASE_POOL_SIZE = 100;
