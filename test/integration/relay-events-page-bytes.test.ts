import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { signVote } from '../../core/relay/vote.js';
import { call, postClaim, registerNode, startRelayServer, tempDataDir, type RunningRelay, type StartRelayServerOptions } from '../support/relay-test-kit.js';

/**
 * A GET /events page ends before its events' data (as answered) pass a byte budget (4 MiB; small
 * here), with at least one event, so `limit=500` over the largest events no longer builds tens of
 * MB for anyone who asks. Short pages still concatenate to the whole feed, and a relay pulling
 * from a peer follows `has_more` across them.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 28, 12)));
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function relayWith(options: Omit<StartRelayServerOptions, 'clock' | 'dataDir'>): Promise<RunningRelay> {
  const data = tempDataDir('relay-page-bytes-');
  const relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), ...options });
  cleanups.push(async () => {
    await relay.close();
    data.remove();
  });
  return relay;
}

type Page = { events: { seq: number; kind: string; data: unknown }[]; next: number; has_more: boolean };
const page = async (relay: RunningRelay, since: number, limit: number) => {
  const answer = await call<Page>(relay.baseUrl, 'GET', `/events?since=${since}&limit=${limit}`);
  expect(answer.status).toBe(200);
  return answer.body;
};

/** Every page from the start, following `next` while `has_more`. */
async function allPages(relay: RunningRelay, limit: number): Promise<Page[]> {
  const pages: Page[] = [];
  let since = 0;
  for (;;) {
    const p = await page(relay, since, limit);
    pages.push(p);
    if (!p.has_more) return pages;
    expect(p.next).toBe(p.events.at(-1)!.seq);
    since = p.next;
  }
}

const budget = 6_000;

/** A relay whose feed is a registration and `count` claims of about 2 kB each, then one of about 8 kB (over the budget alone). */
async function fedRelay(options: Omit<StartRelayServerOptions, 'clock' | 'dataDir'> = {}) {
  const relay = await relayWith({ eventsPagePayloadMaxBytes: budget, ...options });
  const author = await registerNode(relay, clock, { name: 'author' });
  for (let k = 0; k < 9; k++) await postClaim(relay, author, { kind: 'statement', title: `claim ${k}`, body: `${k}`.repeat(2_000) });
  await postClaim(relay, author, { kind: 'statement', title: 'large', body: 'L'.repeat(8_000) });
  await postClaim(relay, author, { kind: 'statement', title: 'after the large one', body: 'a' });
  return relay;
}

describe('GET /events pages within a byte budget', () => {
  it('ends a page before its payloads pass the budget, holds at least one event, and the pages concatenate to the feed', async () => {
    const relay = await fedRelay();
    const onePerPage = (await allPages(relay, 1)).flatMap((p) => p.events);
    const pages = await allPages(relay, 500);
    // limit 500 covers the whole feed, yet the budget cut it into several pages.
    expect(pages.length).toBeGreaterThan(3);
    expect(pages.flatMap((p) => p.events)).toEqual(onePerPage);
    for (const p of pages) {
      expect(p.events.length).toBeGreaterThanOrEqual(1);
      // Each page's data is within the budget, unless one event alone is larger.
      if (p.events.length > 1) expect(JSON.stringify(p.events.map((e) => e.data)).length).toBeLessThanOrEqual(budget);
    }
    const large = pages.find((p) => p.events.some((e) => JSON.stringify(e.data).includes('L'.repeat(8_000))))!;
    expect(large.events).toHaveLength(1);
    expect(large.has_more).toBe(true);
    expect(pages.at(-1)!.has_more).toBe(false);
    // A page read from the middle starts right after its cursor.
    const middle = pages[1]!;
    expect((await page(relay, pages[0]!.next, 500)).events[0]).toEqual(middle.events[0]);
  });

  // Regression: the budget counted stored payloads only, while a vote naming its slice by hash is
  // answered with the whole quorum set (up to 1000 node ids): 500 such votes were tens of MB again.
  it('counts the data as answered: a vote naming its slice by hash carries its quorum set', async () => {
    const relay = await relayWith({ eventsPagePayloadMaxBytes: budget });
    const voter = await registerNode(relay, clock, { name: 'voter' });
    const slice = { t: 1, v: Array.from({ length: 40 }, () => generateNodeKey().nodeId) };
    const published = await call(relay.baseUrl, 'POST', '/slice', { body: slice, auth: voter.auth });
    expect(published.status, published.text).toBe(200);
    for (let k = 0; k < 6; k++) {
      const item = await postClaim(relay, voter, { kind: 'statement', title: `voted on ${k}`, body: '' });
      const vote = signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: voter.nodeId, value: 'yes', phase: 'vote', slice_hash: String(published.body.slice_hash), created_at: Math.floor(clock.nowMs() / 1000) }, voter.secretKey);
      const voted = await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: vote });
      expect(voted.status, voted.text).toBe(201);
    }
    const pages = await allPages(relay, 500);
    const votes = pages.flatMap((p) => p.events).filter((e) => e.kind === 'vote' && JSON.stringify(e.data).includes(slice.v[0]!));
    expect(votes).toHaveLength(6);
    for (const p of pages) if (p.events.length > 1) expect(JSON.stringify(p.events.map((e) => e.data)).length).toBeLessThanOrEqual(budget);
    expect(pages.flatMap((p) => p.events)).toEqual((await allPages(relay, 1)).flatMap((p) => p.events));
  });

  it('a peer pulling the feed follows has_more across short pages to its end', async () => {
    const upstream = await fedRelay();
    const operatorKey = generateNodeKey();
    // One page per probe, so the probes count the short pages the puller followed.
    const relay = await relayWith({ peers: [upstream.baseUrl], operators: [operatorKey.nodeId], peerPagesPerProbe: 1 });
    const operator = await registerNode(relay, clock, { key: operatorKey });
    const upstreamItems = (await call<{ items: { id: string }[] }>(upstream.baseUrl, 'GET', '/items')).body.items.map((i) => i.id).sort();
    expect(upstreamItems).toHaveLength(11);

    const pulled = await call<{ caught_up: boolean; results: { probes: number; rejected: number; error: string | null }[] }>(relay.baseUrl, 'POST', '/federation/pull', { body: {}, auth: operator.auth });
    expect(pulled.status).toBe(200);
    expect(pulled.body.caught_up).toBe(true);
    expect(pulled.body.results).toEqual([expect.objectContaining({ rejected: 0, error: null })]);
    expect(pulled.body.results[0]!.probes).toBeGreaterThan(3);
    const here = (await call<{ items: { id: string }[] }>(relay.baseUrl, 'GET', '/items')).body.items.map((i) => i.id).sort();
    expect(here).toEqual(upstreamItems);
  });
});
