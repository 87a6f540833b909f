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

/**
 * A `vote` event's payload, `{"vote": document}`, from the document's JSON text (without serialising
 * it again). `EventRepository.after` writes the same in SQL for the events that name their statement.
 */
export function votePayloadJson(documentJson: string): string {
  return `{"vote":${documentJson}}`;
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
   * Appends the `vote` event of a statement's first document, stored in `votes` in the same
   * transaction: the event names the statement (voter `author`, item `subject`, value, phase) and
   * `after` reads its payload, `{"vote": document}`, from there, whatever `payloadJson` holds (empty,
   * so the document is not written twice, or the old form: `RelayStore.appendVoteEvent`, decision
   * 1170). `votes` rows are never updated or deleted, so the name always finds the text the event
   * was appended with.
   */
  *appendVote(event: { voter: string; item: string; value: string; phase: string; payloadJson: string; origin: string | null; nowMs: number }): Steps<void> {
    yield* this.q.run(
      "INSERT INTO events (kind, author, subject, payload, origin, created_ms, vote_value, vote_phase) VALUES ('vote', ?, ?, ?, ?, ?, ?, ?)",
      event.voter,
      event.item,
      event.payloadJson,
      event.origin,
      event.nowMs,
      event.value,
      event.phase,
    );
  }

  /**
   * Events after `since`, oldest first, at most `limit`, optionally by some authors, each with its
   * payload (a vote event that names its statement with the document read from `votes`). One
   * statement reads one snapshot; rowids only grow and are committed in order (see RelayStore).
   */
  *after(since: number, authors: readonly string[], limit: number): Steps<EventRow[]> {
    const byAuthors = authors.length ? `AND e.author IN (${authors.map(() => '?').join(',')})` : '';
    // Not cached: the text varies with the number of authors.
    const rows = yield* this.q.allOnce<Omit<EventRow, 'payload'> & { payload: string | null }>(
      `SELECT e.seq, e.kind, e.author, e.subject, CASE WHEN e.vote_value IS NULL THEN e.payload ELSE '{"vote":' || v.doc || '}' END AS payload, e.origin, e.created_ms
       FROM events e LEFT JOIN votes v ON e.vote_value IS NOT NULL AND v.voter = e.author AND v.item_id = e.subject AND v.value = e.vote_value AND v.phase = e.vote_phase
       WHERE e.seq > ? ${byAuthors} ORDER BY e.seq LIMIT ?`,
      since,
      ...authors,
      limit,
    );
    for (const row of rows) {
      // Only if a statement's row were deleted by hand: said here, not served as an empty payload.
      if (row.payload === null) {
        throw new Error(
          `event ${row.seq} names a statement that is not stored (voter ${row.author} on item ${row.subject}): its row in votes was deleted outside hilbench; restore it from a backup, or GET /events stops at this event`,
        );
      }
    }
    return rows as EventRow[];
  }

  /** Walks the table: tests check the kept counts against it; a request reads RelayCountRepository (decision 1100). */
  *count(): Steps<number> {
    return yield* this.q.count('SELECT COUNT(*) AS n FROM events');
  }
}
