import type { EventRepository, EventRow } from '../../storage/relay/event-repository.js';
import type { Steps } from '../../storage/sql-steps.js';

/**
 * Rows read from the store at once while a page fills: a page that its byte budget ends early has
 * not read (and held) the rest of its `limit` of the largest events.
 */
const EVENTS_READ_CHUNK = 50;

/**
 * One GET /events page: the events after `since`, oldest first, at most `limit`, and no more
 * than `payloadMaxBytes` of their data as `bytesOf` counts it (the data as answered, which may be
 * more than the stored payload; a step, as finding it may read) unless a single event alone is larger (a page always holds at
 * least one event when any follows, so the feed never stalls). A page ended by its budget
 * has `hasMore`; the next page starts after its last event, so pages still concatenate to the
 * whole feed with no gap and no duplicate. Each chunk is one statement; seqs are committed in
 * order (see RelayStore), so a later chunk only sees the feed grown at its end. Steps: the route
 * runs them as one plain rule.
 */
export function* readEventsPage(
  events: Pick<EventRepository, 'after'>,
  since: number,
  authors: readonly string[],
  limit: number,
  payloadMaxBytes: number,
  bytesOf: (row: EventRow) => Steps<number>,
): Steps<{ rows: EventRow[]; hasMore: boolean }> {
  const page: EventRow[] = [];
  let bytes = 0;
  let cursor = since;
  for (;;) {
    const want = Math.min(EVENTS_READ_CHUNK, limit - page.length);
    const rows = yield* events.after(cursor, authors, want);
    for (const row of rows) {
      const size = yield* bytesOf(row);
      if (page.length > 0 && bytes + size > payloadMaxBytes) return { rows: page, hasMore: true };
      page.push(row);
      bytes += size;
    }
    if (rows.length < want) return { rows: page, hasMore: false };
    cursor = page.at(-1)!.seq;
    if (page.length === limit) return { rows: page, hasMore: (yield* events.after(cursor, authors, 1)).length > 0 };
  }
}
