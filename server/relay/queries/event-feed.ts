import { isNodeId } from '../../../core/relay/node-id.js';
import type { RelayDeps } from '../relay-deps.js';
import { readEventsPage } from '../domain/events-page.js';
import { invalidInputAt } from '../domain/relay-errors.js';
import type { EventRow } from '../../storage/relay/event-repository.js';
import type { Steps } from '../../storage/sql-steps.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';

/** An event of a page with its data as answered. */
export type AnsweredEvent = EventRow & { data: Record<string, unknown> };

/**
 * GET /events: one page of the feed, its query checked first. The rule of a page (how far it goes
 * and where it stops) is `readEventsPage`; this adds what an event's data shows beyond what was
 * stored, which is also what the page's byte budget counts.
 */
export class EventFeed {
  constructor(private readonly deps: RelayDeps) {}

  /** The page after `since` (the query's strings, as the route parsed them); `next` is where the next page starts. */
  async page(query: { since?: string | undefined; limit?: string | undefined; authors?: string | undefined }): Promise<{ events: AnsweredEvent[]; next: number; hasMore: boolean }> {
    const since = Number(query.since ?? 0);
    const limit = query.limit === undefined ? relayLimits.eventsPageDefault : Number(query.limit);
    // Pydantic's words for `Query(ge=1, le=max)`: one bound per error, the one that was crossed.
    if (limit < 1) throw invalidInputAt(['query'], [{ path: ['limit'], code: 'below_minimum', limit: 1, input: query.limit }]);
    if (limit > relayLimits.eventsPageMax) throw invalidInputAt(['query'], [{ path: ['limit'], code: 'above_maximum', limit: relayLimits.eventsPageMax, input: query.limit }]);
    const authors = query.authors === undefined || query.authors === '' ? [] : query.authors.split(',').map((a) => a.trim());
    if (authors.length > relayLimits.authorsFilterMax) {
      throw invalidInputAt(['query'], [{ path: ['authors'], code: 'too_many_items', limit: relayLimits.authorsFilterMax, input: query.authors }]);
    }
    authors.forEach((a, index) => {
      if (!isNodeId(a)) throw invalidInputAt(['query', 'authors', index], [{ path: [], code: 'not_author_id', input: a }]);
    });
    // Counted as answered: a vote naming its slice by hash carries the quorum set, which its
    // stored payload does not (up to 1000 node ids), so the stored text alone bounds nothing.
    const dataBySeq = new Map<number, Record<string, unknown>>();
    const eventData = (kind: string, payload: Record<string, unknown>) => this.eventData(kind, payload);
    const bytesOf = function* (r: EventRow): Steps<number> {
      let answered = dataBySeq.get(r.seq);
      if (answered === undefined) {
        answered = yield* eventData(r.kind, JSON.parse(r.payload) as Record<string, unknown>);
        dataBySeq.set(r.seq, answered);
      }
      return Buffer.byteLength(JSON.stringify(answered), 'utf8');
    };
    const { store } = this.deps;
    const { rows, hasMore } = await store.plain(readEventsPage(store.data.events, since, authors, limit, this.deps.eventsPagePayloadMaxBytes, bytesOf));
    // One rule: every event of the page was measured, so its data is in `dataBySeq`.
    return { events: rows.map((r) => ({ ...r, data: dataBySeq.get(r.seq)! })), next: rows.at(-1)?.seq ?? since, hasMore };
  }

  /**
   * An event's data as served: what a peer needs to verify it. Events stored before signed
   * authorship and declarations say so with null; a statement naming its slice by hash carries the
   * quorum set, so a peer that never saw it can still tally it (it checks the hash).
   */
  private *eventData(kind: string, payload: Record<string, unknown>): Steps<Record<string, unknown>> {
    if (kind === 'item' && payload.item !== null && typeof payload.item === 'object') return { ...payload, item: { ...payload.item, authorship: (payload.item as { authorship?: unknown }).authorship ?? null } };
    if (kind === 'slice') return { ...payload, declaration: payload.declaration ?? null };
    const hash = kind === 'vote' ? (payload.vote as { slice_hash?: unknown } | undefined)?.slice_hash : undefined;
    if (typeof hash !== 'string') return payload;
    const slice = yield* this.deps.voting.quorumSetByHash(hash);
    return slice ? { ...payload, slice } : payload;
  }
}
