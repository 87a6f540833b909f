import type { Steps } from '../sql-steps.js';
import type { RelaySql } from './relay-sql.js';

/** The relay's public counts (GET /network's `counts`; the site and GET /nodes show some of them): rows held now. */
export interface RelayTotals {
  /** Every node this relay holds: registered here, learned from peers, and its own. */
  nodes: number;
  /** Nodes registered here (`nodes.local` 1). */
  nodes_registered_here: number;
  items: number;
  /** Stored statements, one per voter, item, value and phase (other documents of one are not counted). */
  votes: number;
  events: number;
  peers: number;
}

/**
 * The public counts, each exact and none walking its table (decision 1100): on SQLite a public
 * read runs on the event loop, where COUNT(*) took about 20 ms per 100 000 rows once the index was
 * out of the page cache, so any client could stall a large relay by repeating GET /network.
 *
 * SQLite: nothing in the relay deletes or replaces a node, item, vote or event (a test reads the
 * repositories' statements to keep it so), and a rolled back or conflicting insert takes no rowid,
 * so each table's largest rowid (the events' `seq`) is its count: the insert maintains it, at no
 * cost to the vote path. Nodes registered here are counted by triggers in `relay_counts`
 * (`local` changes when a learned node registers here). PostgreSQL has no rowid and a sequence
 * skips values, so there triggers keep every count in `relay_counts`, in the writing transaction,
 * and every replica reads the same committed rows. Peers are few (only operators add them) and
 * counted.
 */
export class RelayCountRepository {
  constructor(private readonly q: RelaySql) {}

  /** All six counts, in one statement (one snapshot). */
  *totals(): Steps<RelayTotals> {
    const row = (yield* this.q.get(this.q.dialect === 'sqlite' ? SQLITE_TOTALS : POSTGRES_TOTALS)) as Record<keyof RelayTotals, number | string | null>;
    return {
      nodes: Number(row.nodes ?? 0),
      nodes_registered_here: Number(row.nodes_registered_here ?? 0),
      items: Number(row.items ?? 0),
      votes: Number(row.votes ?? 0),
      events: Number(row.events ?? 0),
      peers: Number(row.peers ?? 0),
    };
  }

  /** The nodes this relay holds (GET /nodes's `total`), as `totals` counts them. */
  *nodes(): Steps<number> {
    return yield* this.q.count(this.q.dialect === 'sqlite' ? 'SELECT COALESCE(MAX(rowid), 0) AS n FROM nodes' : "SELECT n FROM relay_counts WHERE name = 'nodes'");
  }
}

const SQLITE_TOTALS = `SELECT
  (SELECT COALESCE(MAX(rowid), 0) FROM nodes) AS nodes,
  (SELECT n FROM relay_counts WHERE name = 'nodes_registered_here') AS nodes_registered_here,
  (SELECT COALESCE(MAX(rowid), 0) FROM items) AS items,
  (SELECT COALESCE(MAX(rowid), 0) FROM votes) AS votes,
  (SELECT COALESCE(MAX(seq), 0) FROM events) AS events,
  (SELECT COUNT(*) FROM peers) AS peers`;

const POSTGRES_TOTALS = `SELECT
  MAX(n) FILTER (WHERE name = 'nodes') AS nodes,
  MAX(n) FILTER (WHERE name = 'nodes_registered_here') AS nodes_registered_here,
  MAX(n) FILTER (WHERE name = 'items') AS items,
  MAX(n) FILTER (WHERE name = 'votes') AS votes,
  MAX(n) FILTER (WHERE name = 'events') AS events,
  (SELECT COUNT(*) FROM peers) AS peers
FROM relay_counts`;
