import type { Steps } from '../sql-steps.js';
import type { RelaySql } from './relay-sql.js';

export type EventKind = 'node' | 'item' | 'vote' | 'slice';

export interface EventRow {
  seq: number;
  kind: string;
  author: string;
  subject: string;
  payload: string;
  origin: string | null;
  created_ms: number;
}

/** The event feed: append only, `seq` never reused. */
export class EventRepository {
  constructor(private readonly q: RelaySql) {}

  /** Appends an event; returns its seq. */
  *append(event: { kind: EventKind; author: string; subject: string; payloadJson: string; origin: string | null; nowMs: number }): Steps<number> {
    const seq = (yield* this.q.value<number>(
      'INSERT INTO events (kind, author, subject, payload, origin, created_ms) VALUES (?, ?, ?, ?, ?, ?) RETURNING seq',
      event.kind,
      event.author,
      event.subject,
      event.payloadJson,
      event.origin,
      event.nowMs,
    ));
    return Number(seq);
  }

  /**
   * Events after `since`, oldest first, at most `limit`, optionally by some authors. One statement
   * reads one snapshot; rowids only grow and are committed in order (see RelayStore).
   */
  *after(since: number, authors: readonly string[], limit: number): Steps<EventRow[]> {
    const byAuthors = authors.length ? `AND author IN (${authors.map(() => '?').join(',')})` : '';
    // Not cached: the text varies with the number of authors.
    return (yield* this.q.allOnce<EventRow>(`SELECT seq, kind, author, subject, payload, origin, created_ms FROM events WHERE seq > ? ${byAuthors} ORDER BY seq LIMIT ?`, since, ...authors, limit));
  }

  /** Walks the table: tests check the kept counts against it; a request reads RelayCountRepository (decision 1100). */
  *count(): Steps<number> {
    return yield* this.q.count('SELECT COUNT(*) AS n FROM events');
  }
}
