import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EventRepository, EventRow } from '../../storage/relay/event-repository.js';
import { readEventsPage } from './events-page.js';
import { runStepsSync, type Steps } from '../../storage/sql-steps.js';

/** The feed as the store keeps it: `after` pages by seq, as the SQL does (authors unused here). */
function feedOf(sizes: readonly number[]): { events: Pick<EventRepository, 'after'>; rows: EventRow[]; reads: number[] } {
  const rows = sizes.map((size, k): EventRow => ({ seq: 3 * k + 1, kind: 'item', author: 'a', subject: 's', payload: 'x'.repeat(size), origin: null, created_ms: k }));
  const reads: number[] = [];
  const events = {
    *after(since: number, _authors: readonly string[], limit: number): Steps<EventRow[]> {
      reads.push(limit);
      return rows.filter((r) => r.seq > since).slice(0, limit);
    },
  };
  return { events, rows, reads };
}

const bytesOf = function* (row: EventRow): Steps<number> {
  return row.payload.length;
};
/** The page's steps run at once: the feed above answers without statements. */
const readPage = (...args: Parameters<typeof readEventsPage>) => runStepsSync(readEventsPage(...args), () => undefined);

describe('readEventsPage', () => {
  it('walks the whole feed in pages that are each as full as their limit and budget allow', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 260 }), fc.integer({ min: 1, max: 130 }), fc.integer({ min: 1, max: 400 }), (sizes, limit, budget) => {
        const { events, rows } = feedOf(sizes);
        const seen: number[] = [];
        let since = 0;
        for (let pages = 0; pages <= rows.length + 1; pages++) {
          const page = readPage(events, since, [], limit, budget, bytesOf);
          const bytes = page.rows.reduce((sum, r) => sum + r.payload.length, 0);
          expect(page.rows.length).toBeLessThanOrEqual(limit);
          if (page.rows.length > 1) expect(bytes).toBeLessThanOrEqual(budget);
          seen.push(...page.rows.map((r) => r.seq));
          const next = rows.find((r) => r.seq > (page.rows.at(-1)?.seq ?? since));
          // Not cut early: the event after the page would pass the budget, or the page is full.
          if (next && page.rows.length < limit) expect(page.rows.length > 0 && bytes + next.payload.length > budget).toBe(true);
          expect(page.hasMore).toBe(next !== undefined);
          if (!page.hasMore) break;
          since = page.rows.at(-1)!.seq;
        }
        expect(seen).toEqual(rows.map((r) => r.seq));
      }),
      { numRuns: 300 },
    );
  });

  it('holds one event larger than the budget alone, so the feed never stalls', () => {
    const { events } = feedOf([10, 500, 10]);
    expect(readPage(events, 0, [], 100, 100, bytesOf).rows.map((r) => r.payload.length)).toEqual([10]);
    expect(readPage(events, 1, [], 100, 100, bytesOf)).toMatchObject({ rows: [{ seq: 4 }], hasMore: true });
  });

  it('reads the store 50 rows at a time, and asks for one more only when the page is full', () => {
    const { events, reads } = feedOf(Array.from({ length: 120 }, () => 1));
    expect(readPage(events, 0, [], 120, 10_000, bytesOf)).toMatchObject({ hasMore: false });
    expect(reads).toEqual([50, 50, 20, 1]);
    reads.length = 0;
    expect(readPage(events, 0, [], 500, 10_000, bytesOf).rows).toHaveLength(120);
    // The third chunk came back short: the end of the feed, no extra read.
    expect(reads).toEqual([50, 50, 50]);
  });
});
