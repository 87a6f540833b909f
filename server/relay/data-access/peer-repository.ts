import type { PreparedStatements } from './prepared-statements.js';

export interface PeerRow {
  url: string;
  node_id: string | null;
  added_ms: number;
  added_by: string | null;
  cursor: number;
  last_probe_ms: number | null;
  reachable: number | null;
  last_error: string | null;
  version: string | null;
  pulled_events: number;
  rejected_events: number;
  /** Documents the peer served that failed verification (forged, mismatched, by unknown nodes) since it was last added. */
  offences: number;
  last_offence: string | null;
  /** When the peer passed the offence bound and stopped being pulled from; null while in standing. */
  suspended_ms: number | null;
}

/** Peer relays, their feed cursors and probe results. */
export class PeerRepository {
  constructor(private readonly q: PreparedStatements) {}

  /** Adds a peer; false when it was already known. */
  insertIfNew(url: string, addedBy: string | null, nowMs: number): boolean {
    return this.q.sql('INSERT OR IGNORE INTO peers (url, added_ms, added_by) VALUES (?, ?, ?)').run(url, nowMs, addedBy).changes > 0;
  }

  get(url: string): PeerRow | undefined {
    return this.q.sql('SELECT * FROM peers WHERE url = ?').get(url) as PeerRow | undefined;
  }

  /** Oldest first (ties by URL). */
  all(): PeerRow[] {
    return this.q.sql('SELECT * FROM peers ORDER BY added_ms, url').all() as PeerRow[];
  }

  /** What the peer's /health said it is. */
  recordIdentity(url: string, nodeId: string | null, version: string | null): void {
    this.q.sql('UPDATE peers SET node_id = ?, version = ? WHERE url = ?').run(nodeId, version, url);
  }

  advanceCursor(url: string, cursor: number, pulledEvents: number): void {
    this.q.sql('UPDATE peers SET cursor = ?, pulled_events = pulled_events + ? WHERE url = ?').run(cursor, pulledEvents, url);
  }

  recordProbe(url: string, probe: { nowMs: number; reachable: boolean; error: string | null; rejectedEvents: number }): void {
    this.q
      .sql('UPDATE peers SET last_probe_ms = ?, reachable = ?, last_error = ?, rejected_events = rejected_events + ? WHERE url = ?')
      .run(probe.nowMs, probe.reachable ? 1 : 0, probe.error, probe.rejectedEvents, url);
  }

  /**
   * Counts documents the peer served that failed verification; at `limit` or more the peer is
   * suspended (kept, not pulled from) from `nowMs`. Returns whether it is suspended now.
   */
  recordOffences(url: string, offences: { count: number; last: string; nowMs: number; limit: number }): boolean {
    this.q
      .sql('UPDATE peers SET offences = offences + ?, last_offence = ?, suspended_ms = CASE WHEN suspended_ms IS NULL AND offences + ? >= ? THEN ? ELSE suspended_ms END WHERE url = ?')
      .run(offences.count, offences.last, offences.count, offences.limit, offences.nowMs, url);
    return this.get(url)?.suspended_ms !== null;
  }

  /** An operator added the peer again: its standing starts afresh (the last offence stays on record). */
  reinstate(url: string): boolean {
    return this.q.sql('UPDATE peers SET offences = 0, suspended_ms = NULL WHERE url = ? AND (suspended_ms IS NOT NULL OR offences > 0)').run(url).changes > 0;
  }

  count(): number {
    return this.q.count('SELECT COUNT(*) AS n FROM peers');
  }
}
