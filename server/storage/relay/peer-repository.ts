import { withLoneSurrogatesReplaced } from '../../../core/unicode-text.js';
import type { Steps } from '../sql-steps.js';
import type { RelaySql } from './relay-sql.js';

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

/** Characters of a probe's `last_error` or a peer's `last_offence` kept at most (the public GET /reach shows them). */
export const PEER_NOTE_MAX_CHARS = 1000;

/**
 * A note about a peer as it can be stored and shown: many carry text the peer chose (a refusal's
 * reason quotes what it sent), so it is cut to `PEER_NOTE_MAX_CHARS` code points, U+0000 is
 * written as `\u0000` and a lone surrogate as U+FFFD (PostgreSQL's text holds neither, and a
 * probe whose record failed answered 500 and never counted the peer's offences).
 */
export function storablePeerNote(note: string): string {
  const clean = withLoneSurrogatesReplaced(note.replaceAll('\u0000', '\\u0000'));
  // UTF-16 units are at least code points: most notes need no count.
  if (clean.length <= PEER_NOTE_MAX_CHARS) return clean;
  const points = Array.from(clean);
  return points.length <= PEER_NOTE_MAX_CHARS ? clean : `${points.slice(0, PEER_NOTE_MAX_CHARS - 1).join('')}…`;
}

/** Peer relays, their feed cursors and probe results. */
export class PeerRepository {
  constructor(private readonly q: RelaySql) {}

  /** Adds a peer; false when it was already known. */
  *insertIfNew(url: string, addedBy: string | null, nowMs: number): Steps<boolean> {
    return (yield* this.q.run('INSERT INTO peers (url, added_ms, added_by) VALUES (?, ?, ?) ON CONFLICT DO NOTHING', url, nowMs, addedBy)) > 0;
  }

  *get(url: string): Steps<PeerRow | undefined> {
    return (yield* this.q.get('SELECT * FROM peers WHERE url = ?', url)) as PeerRow | undefined;
  }

  /** Oldest first (ties by URL). */
  *all(): Steps<PeerRow[]> {
    return (yield* this.q.all('SELECT * FROM peers ORDER BY added_ms, url')) as PeerRow[];
  }

  /** What the peer's /health said it is. */
  *recordIdentity(url: string, nodeId: string | null, version: string | null): Steps<void> {
    yield* this.q.run('UPDATE peers SET node_id = ?, version = ? WHERE url = ?', nodeId, version, url);
  }

  /**
   * Moves the peer's feed cursor forward, never back: replicas probing one peer at once each read a
   * page from where they started, and the later commit must not undo the further one (decision 0440).
   */
  *advanceCursor(url: string, cursor: number, pulledEvents: number): Steps<void> {
    yield* this.q.run('UPDATE peers SET cursor = CASE WHEN ? > cursor THEN ? ELSE cursor END, pulled_events = pulled_events + ? WHERE url = ?', cursor, cursor, pulledEvents, url);
  }

  *recordProbe(url: string, probe: { nowMs: number; reachable: boolean; error: string | null; rejectedEvents: number }): Steps<void> {
    yield* this.q.run('UPDATE peers SET last_probe_ms = ?, reachable = ?, last_error = ?, rejected_events = rejected_events + ? WHERE url = ?', probe.nowMs, probe.reachable ? 1 : 0, probe.error === null ? null : storablePeerNote(probe.error), probe.rejectedEvents, url);
  }

  /**
   * Counts documents the peer served that failed verification; at `limit` or more the peer is
   * suspended (kept, not pulled from) from `nowMs`. Returns whether it is suspended now.
   */
  *recordOffences(url: string, offences: { count: number; last: string; nowMs: number; limit: number }): Steps<boolean> {
    yield* this.q.run('UPDATE peers SET offences = offences + ?, last_offence = ?, suspended_ms = CASE WHEN suspended_ms IS NULL AND offences + ? >= ? THEN ? ELSE suspended_ms END WHERE url = ?', offences.count, storablePeerNote(offences.last), offences.count, offences.limit, offences.nowMs, url);
    return (yield* this.get(url))?.suspended_ms !== null;
  }

  /** An operator added the peer again: its standing starts afresh (the last offence stays on record). */
  *reinstate(url: string): Steps<boolean> {
    return (yield* this.q.run('UPDATE peers SET offences = 0, suspended_ms = NULL WHERE url = ? AND (suspended_ms IS NOT NULL OR offences > 0)', url)) > 0;
  }

  *count(): Steps<number> {
    return yield* this.q.count('SELECT COUNT(*) AS n FROM peers');
  }
}
