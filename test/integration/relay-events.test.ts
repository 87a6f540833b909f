import { createClock } from '@sinonjs/fake-timers';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { call, registerNode, relayLimits, startRelayServer, tempDataDir, type RunningRelay, type TestNode } from '../support/relay-test-kit.js';
import { memoryLogger } from '../../server/http/logger.js';

const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const data = tempDataDir();
let relay: RunningRelay;
let writers: TestNode[];

interface Page {
  events: { seq: number; kind: string; author: string; subject: string }[];
  next: number;
  has_more: boolean;
}

const page = (query: string) => call<Page>(relay.baseUrl, 'GET', `/events${query}`);

/** Reads the whole feed (optionally filtered) page by page. */
async function readAll(query = '', limit = 500): Promise<Page['events']> {
  const out: Page['events'] = [];
  let since = 0;
  for (;;) {
    const p = await page(`?since=${since}&limit=${limit}${query}`);
    expect(p.status).toBe(200);
    out.push(...p.body.events);
    since = p.body.next;
    if (!p.body.has_more) return out;
  }
}

beforeAll(async () => {
  relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger() });
  writers = await Promise.all([0, 1, 2, 3].map((i) => registerNode(relay, clock, { name: `writer ${i}` })));
});
afterAll(async () => {
  await relay.close();
  data.remove();
});

describe('GET /events', () => {
  it('pages concatenate to the whole feed, with no gap and no duplicate, while others write', async () => {
    const perWriter = 40;
    const writing = Promise.all(
      writers.map(async (w, wi) => {
        for (let i = 0; i < perWriter; i++) {
          const r = await call(relay.baseUrl, 'POST', '/items', { body: { kind: 'statement', title: `w${wi} item ${i}`, body: '' }, auth: w.auth });
          expect(r.status).toBe(201);
        }
      }),
    );
    // A reader pages with a small page size the whole time the writers run, and then to the end.
    const seen: Page['events'] = [];
    let since = 0;
    let done = false;
    void writing.then(() => (done = true));
    for (;;) {
      const p = await page(`?since=${since}&limit=7`);
      expect(p.body.events.length).toBeLessThanOrEqual(7);
      seen.push(...p.body.events);
      since = p.body.next;
      if (done && !p.body.has_more) {
        // One more read after the writers finished and the feed said "no more": nothing new.
        const last = await page(`?since=${since}&limit=7`);
        if (last.body.events.length === 0) break;
        seen.push(...last.body.events);
        since = last.body.next;
      }
    }
    await writing;
    const seqs = seen.map((e) => e.seq);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]!).toBeGreaterThan(seqs[i - 1]!);
    const whole = await readAll();
    expect(seqs).toEqual(whole.map((e) => e.seq));
    expect(whole.filter((e) => e.kind === 'item')).toHaveLength(writers.length * perWriter);
  });

  it('any sequence of page sizes reads the same feed (property)', async () => {
    const whole = (await readAll()).map((e) => e.seq);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 30 }), async (sizes) => {
        const seen: number[] = [];
        let since = 0;
        for (let i = 0; ; i++) {
          const p = await page(`?since=${since}&limit=${sizes[i % sizes.length]!}`);
          seen.push(...p.body.events.map((e) => e.seq));
          since = p.body.next;
          if (!p.body.has_more) break;
        }
        expect(seen).toEqual(whole);
      }),
      { numRuns: 15 },
    );
  });

  it('filters by authors (comma-separated node ids)', async () => {
    const [a, b] = writers as [TestNode, TestNode];
    const both = await readAll(`&authors=${a.nodeId},${b.nodeId}`);
    expect(new Set(both.map((e) => e.author))).toEqual(new Set([a.nodeId, b.nodeId]));
    const onlyA = await readAll(`&authors=${a.nodeId}`, 5);
    expect(onlyA.every((e) => e.author === a.nodeId)).toBe(true);
    expect(onlyA.length).toBeGreaterThan(5);
    expect(both.length).toBeGreaterThan(onlyA.length);
  });

  it('bounds the page size and validates the query', async () => {
    const bad = [`?limit=${relayLimits.eventsPageMax + 1}`, '?limit=0', '?since=-1', '?since=abc', '?authors=nothex', `?authors=${Array.from({ length: 101 }, () => 'a'.repeat(64)).join(',')}`];
    for (const q of bad) expect((await page(q)).status, q).toBe(422);
    // Each bound in pydantic's words for Query(ge=1, le=max) (a limit of 0 was called less_than_equal).
    expect((await page('?limit=0')).body as unknown).toMatchObject({ detail: [{ type: 'greater_than_equal', loc: ['query', 'limit'], msg: 'Input should be greater than or equal to 1', input: '0', ctx: { ge: 1 } }] });
    const over = String(relayLimits.eventsPageMax + 1);
    expect((await page(`?limit=${over}`)).body as unknown).toMatchObject({ detail: [{ type: 'less_than_equal', loc: ['query', 'limit'], msg: `Input should be less than or equal to ${relayLimits.eventsPageMax}`, input: over, ctx: { le: relayLimits.eventsPageMax } }] });
    const first = await page('');
    expect(first.body.events.length).toBe(relayLimits.eventsPageDefault);
    expect(first.body.has_more).toBe(true);
    // A parameter sent twice counts with its last value, as FastAPI reads it (it was a 422 string_type).
    const twice = await page('?limit=7&limit=2&since=999999999&since=0');
    expect([twice.status, twice.body.events.map((e) => e.seq)]).toEqual([200, first.body.events.slice(0, 2).map((e) => e.seq)]);
    const past = await page('?since=999999999');
    expect(past.body).toEqual({ events: [], next: 999999999, has_more: false });
  });

  // Regression: a repeated parameter was a 422 string_type echoing the array (["500","2"]).
  it('reads a query parameter sent twice as its last value, as FastAPI does', async () => {
    const twice = await page('?limit=500&limit=2');
    expect(twice.status).toBe(200);
    expect(twice.body.events).toHaveLength(2);
    const refused = await call<{ detail: unknown }>(relay.baseUrl, 'GET', '/events?limit=2&limit=0');
    expect([refused.status, refused.body.detail]).toEqual([422, [expect.objectContaining({ loc: ['query', 'limit'], input: '0' })]]);
    expect((await call(relay.baseUrl, 'GET', '/search?q=x&q=writer')).status).toBe(200);
  });
});
