import { createClock } from '@sinonjs/fake-timers';
import { createHash } from 'node:crypto';
import { http, HttpResponse } from 'msw';
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { claimId } from '../../../core/relay/claim.js';
import { generateNodeKey } from '../../../core/relay/node-id.js';
import { signItemAuthorship } from '../../../core/relay/item-authorship.js';
import { signVote } from '../../../core/relay/vote.js';
import { createRelayService, type RelayService } from '../relay-service.js';
import { FederationClosedError } from './federation.js';
import { signDocument } from './signed-document.js';
import { tempDataDir } from '../../../test/support/relay-test-kit.js';
import { memoryLogger } from '../../http/logger.js';

/** A peer relay played by msw: its /health, /events pages and file bytes. Stray requests fail the test. */
const peer = 'http://peer.test';
const server = setupServer();
beforeAll(() => server.listen({ onUnhandledRequest: 'error' }));
afterEach(() => server.resetHandlers());
afterAll(() => server.close());

const fake = createClock(Date.UTC(2026, 10, 20, 12));
const clock = clockFromFakeTimers(fake);
const peerNode = generateNodeKey();
const author = generateNodeKey();
const createdAt = Math.floor(fake.now / 1000);

const registration = (key: ReturnType<typeof generateNodeKey>) => signDocument({ schema: 'x.register/1', node_id: key.nodeId, relay: peer, created_at: createdAt, name: 'remote' }, key.secretKey);
const claim = { kind: 'statement', title: 'remote claim', body: 'from the peer' };
const goodId = claimId(claim);
const fileBytes = new TextEncoder().encode('firmware bytes');
const fileIdOk = createHash('sha256').update(fileBytes).digest('hex');
const fileIdBad = 'f'.repeat(64);
const vote = signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item: goodId, voter: author.nodeId, value: 'yes', phase: 'vote', slice: { t: 1, v: [peerNode.nodeId], i: [] }, created_at: createdAt }, author.secretKey);

const claimBy = (id: string) => signItemAuthorship({ schema: 'x.item/1', item: id, type: 'claim', author: author.nodeId }, author.secretKey);
const fileBy = (id: string, title: string) => signItemAuthorship({ schema: 'x.item/1', item: id, type: 'file', author: author.nodeId, title, media_type: 'application/octet-stream' }, author.secretKey);

/** The peer's feed: valid events interleaved with forged ones. */
const feed = [
  { seq: 1, kind: 'node', author: peerNode.nodeId, subject: peerNode.nodeId, data: { registration: registration(peerNode) } },
  { seq: 2, kind: 'node', author: author.nodeId, subject: author.nodeId, data: { registration: registration(author) } },
  { seq: 3, kind: 'node', author: author.nodeId, subject: author.nodeId, data: { registration: { ...registration(generateNodeKey()), name: 'changed after signing' } } },
  { seq: 4, kind: 'item', author: author.nodeId, subject: goodId, data: { item: { id: goodId, type: 'claim', ...claim, author: author.nodeId, authorship: claimBy(goodId) } } },
  { seq: 5, kind: 'item', author: author.nodeId, subject: 'a'.repeat(64), data: { item: { id: 'a'.repeat(64), type: 'claim', ...claim, title: 'id does not match', author: author.nodeId, authorship: claimBy('a'.repeat(64)) } } },
  { seq: 6, kind: 'item', author: author.nodeId, subject: fileIdOk, data: { item: { id: fileIdOk, type: 'file', title: 'fw', bytes: fileBytes.length, media_type: 'application/octet-stream', author: author.nodeId, authorship: fileBy(fileIdOk, 'fw') } } },
  { seq: 7, kind: 'item', author: author.nodeId, subject: fileIdBad, data: { item: { id: fileIdBad, type: 'file', title: 'lies', bytes: 3, media_type: 'application/octet-stream', author: author.nodeId, authorship: fileBy(fileIdBad, 'lies') } } },
  { seq: 8, kind: 'vote', author: author.nodeId, subject: goodId, data: { vote } },
  { seq: 9, kind: 'vote', author: author.nodeId, subject: goodId, data: { vote: { ...vote, value: 'no' } } },
  { seq: 10, kind: 'gossip', author: author.nodeId, subject: goodId, data: {} },
];

function peerHandlers(pageSize: number) {
  const requested: string[] = [];
  server.use(
    http.get(`${peer}/health`, () => HttpResponse.json({ protocol: 'x-relay', version: '0.9.19', node_id: peerNode.nodeId })),
    http.get(`${peer}/events`, ({ request }) => {
      const url = new URL(request.url);
      requested.push(url.search);
      const since = Number(url.searchParams.get('since'));
      const events = feed.filter((e) => e.seq > since).slice(0, pageSize);
      const next = events.at(-1)?.seq ?? since;
      return HttpResponse.json({ events, next, has_more: feed.some((e) => e.seq > next) });
    }),
    http.get(`${peer}/items/${fileIdOk}`, () => new HttpResponse(fileBytes, { headers: { 'content-type': 'application/octet-stream' } })),
    http.get(`${peer}/items/${fileIdBad}`, () => new HttpResponse(new TextEncoder().encode('not what the id says'))),
  );
  return requested;
}

let data: ReturnType<typeof tempDataDir>;
let relay: RelayService;
beforeEach(async () => {
  data = tempDataDir();
  relay = await createRelayService({ clock, dataDir: data.dir, baseUrl: 'http://me.test', humanUrl: 'http://me.test', fetch: (...a) => fetch(...a), peers: [peer], logger: memoryLogger() });
});
afterEach(async () => {
  await relay.close();
  data.remove();
});

describe('Federation.probe', () => {
  it('asks for pages of peerPageEvents events, and reads no more of a page than it asked for', async () => {
    const small = tempDataDir();
    const own = await createRelayService({ clock, dataDir: small.dir, baseUrl: 'http://me.test', humanUrl: 'http://me.test', fetch: (...a) => fetch(...a), peers: [peer], peerPageEvents: 2, logger: memoryLogger() });
    try {
      // This peer answers pages of 3 whatever it is asked: the third event of each is read with the next page.
      const requested = peerHandlers(3);
      const [result] = await own.federation.probeAll();
      expect(requested).toEqual(['?since=0&limit=2', '?since=2&limit=2', '?since=4&limit=2', '?since=6&limit=2', '?since=8&limit=2']);
      expect(result).toMatchObject({ reachable: true, cursor: 10, pulled: 5, rejected: 5, caught_up: true });
    } finally {
      await own.close();
      small.remove();
    }
  });

  it.each([0, 501, 2.5])('refuses a page of %s events (1 to 500, what a relay serves at most)', async (pageEvents) => {
    const bad = tempDataDir();
    try {
      await expect(createRelayService({ clock, dataDir: bad.dir, baseUrl: 'http://me.test', humanUrl: 'http://me.test', peerPageEvents: pageEvents, logger: memoryLogger() })).rejects.toThrow(/pageEvents must be a whole number from 1 to 500/);
    } finally {
      bad.remove();
    }
  });

  it('pulls every page, stores what verifies and refuses the forgeries', async () => {
    const requested = peerHandlers(3);
    const [result] = await relay.federation.probeAll();
    expect(result).toMatchObject({ url: peer, reachable: true, node_id: peerNode.nodeId, version: '0.9.19', cursor: 10 });
    expect(requested).toEqual(['?since=0&limit=500', '?since=3&limit=500', '?since=6&limit=500', '?since=9&limit=500']);
    // Stored: 2 nodes, the claim, the file, the vote. Refused: forged registration, wrong claim id,
    // wrong file bytes, tampered vote, unknown kind.
    expect(result!.pulled).toBe(5);
    expect(result!.rejected).toBe(5);
    const peerRow = (await relay.federation.peer(peer))!;
    expect(peerRow.reachable).toBe(1);
    expect(peerRow.rejected_events).toBe(5);
    expect(peerRow.last_error).toMatch(/unknown event kind/);
    // Four of them are false documents (an unknown kind may be a newer relay's): they count against its standing.
    expect(peerRow).toMatchObject({ offences: 4, suspended_ms: null, last_offence: expect.stringMatching(/^event 9 \(vote\): vote signature does not verify/) });
  });

  it('does not pull again what it already has, and is idempotent', async () => {
    peerHandlers(500);
    await relay.federation.probeAll();
    const again = await relay.federation.probeAll();
    expect(again[0]).toMatchObject({ pulled: 0, rejected: 0, cursor: 10 });
  });

  it('stops reading an event page past its byte bound, so a peer streaming without end cannot fill memory', async () => {
    const bound = 1024 * 1024;
    const chunk = new TextEncoder().encode(' '.repeat(64 * 1024));
    let sent = 0;
    server.use(
      http.get(`${peer}/health`, () => HttpResponse.json({ protocol: 'x-relay', version: '0.9.19', node_id: peerNode.nodeId })),
      // 64 MiB of whitespace before a page that would parse: read whole, it cost 64 times the bound.
      http.get(`${peer}/events`, () =>
        new HttpResponse(
          new ReadableStream<Uint8Array>({
            pull(controller) {
              if (sent++ < 1024) controller.enqueue(chunk);
              else {
                controller.enqueue(new TextEncoder().encode('{"events": [], "next": 0, "has_more": false}'));
                controller.close();
              }
            },
          }),
          { headers: { 'content-type': 'application/json' } },
        ),
      ),
    );
    const dir = tempDataDir();
    const bounded = await createRelayService({ clock, dataDir: dir.dir, baseUrl: 'http://me.test', humanUrl: 'http://me.test', fetch: (...a) => fetch(...a), peers: [peer], logger: memoryLogger(), peerPageMaxBytes: bound });
    try {
      const [result] = await bounded.federation.probeAll();
      expect(result).toMatchObject({ reachable: true, pulled: 0, error: `${peer}/events?since=0&limit=500 answered more than ${bound} bytes; not read further` });
      // The stream was cancelled a few chunks past the bound, not read to its end.
      expect(sent).toBeLessThan(64);
    } finally {
      await bounded.close();
      dir.remove();
    }
  });

  it('marks a peer that does not speak x-relay as unreachable', async () => {
    server.use(http.get(`${peer}/health`, () => HttpResponse.json({ protocol: 'something-else' })));
    const [result] = await relay.federation.probeAll();
    expect(result).toMatchObject({ reachable: false, pulled: 0, error: expect.stringMatching(/does not report protocol x-relay/) });
  });

  it('probes periodically on the injected clock when probeIntervalMs is set', async () => {
    const dir = tempDataDir();
    let healthCalls = 0;
    server.use(
      http.get(`${peer}/health`, () => {
        healthCalls++;
        return HttpResponse.json({ protocol: 'x-relay', version: '0.9.19', node_id: peerNode.nodeId });
      }),
      http.get(`${peer}/events`, () => HttpResponse.json({ events: [], next: 0, has_more: false })),
    );
    const periodic = await createRelayService({ clock, dataDir: dir.dir, baseUrl: 'http://p.test', humanUrl: 'http://p.test', fetch: (...a) => fetch(...a), peers: [peer], probeIntervalMs: 60_000, logger: memoryLogger() });
    try {
      await fake.tickAsync(59_999);
      expect(healthCalls).toBe(0);
      await fake.tickAsync(1);
      await vi.waitFor(() => expect(healthCalls).toBe(1));
      // The next probe is armed when this one finishes; fake time then has to pass again.
      await vi.waitFor(async () => {
        await fake.tickAsync(10_000);
        expect(healthCalls).toBe(2);
      }, { timeout: 5000 });
    } finally {
      await periodic.close();
      dir.remove();
    }
  });
});

describe('Federation against a misbehaving peer', () => {
  it('refuses a page whose seqs do not increase, keeping the cursor where it was', async () => {
    server.use(
      http.get(`${peer}/health`, () => HttpResponse.json({ protocol: 'x-relay', version: '0.9.19', node_id: peerNode.nodeId })),
      http.get(`${peer}/events`, () => HttpResponse.json({ events: [feed[1], feed[0]], next: 2, has_more: false })),
    );
    const [result] = await relay.federation.probeAll();
    expect(result).toMatchObject({ reachable: true, pulled: 0, cursor: 0, error: expect.stringMatching(/refusing the page/) });
  });

  it.each([['null', null], ['a number', 7], ['a list', []], ['an object without events', { next: 1 }]])(
    'says in words that a page answered as %s is no event page, never a JavaScript error',
    async (_what, body) => {
      server.use(
        http.get(`${peer}/health`, () => HttpResponse.json({ protocol: 'x-relay', version: '0.9.19', node_id: peerNode.nodeId })),
        http.get(`${peer}/events`, () => HttpResponse.json(body)),
      );
      const [result] = await relay.federation.probeAll();
      expect(result).toMatchObject({ reachable: true, pulled: 0, error: `${peer}/events answered something that is not an event page` });
    },
  );

  it('a peer answering 500 is reachable but its error is kept', async () => {
    server.use(
      http.get(`${peer}/health`, () => HttpResponse.json({ protocol: 'x-relay', version: '0.9.19', node_id: peerNode.nodeId })),
      http.get(`${peer}/events`, () => HttpResponse.json({ detail: 'boom' }, { status: 500 })),
    );
    const [result] = await relay.federation.probeAll();
    expect(result).toMatchObject({ reachable: true, pulled: 0, error: expect.stringMatching(/answered 500/) });
    expect((await relay.federation.peer(peer))!.last_error).toMatch(/answered 500/);
  });
});

describe('Federation timeouts', () => {
  it('gives up on a peer that never answers, after requestTimeoutMs on the injected clock', async () => {
    const dir = tempDataDir();
    let arrived!: () => void;
    const reached = new Promise<void>((r) => (arrived = r));
    server.use(
      http.get(`${peer}/health`, async () => {
        arrived();
        await new Promise(() => undefined);
        return HttpResponse.json({});
      }),
    );
    const slow = await createRelayService({ clock, dataDir: dir.dir, baseUrl: 'http://s.test', humanUrl: 'http://s.test', fetch: (...a) => fetch(...a), peers: [peer], peerRequestTimeoutMs: 2000, logger: memoryLogger() });
    try {
      const probing = slow.federation.probeAll();
      await reached;
      fake.tick(2000);
      const [result] = await probing;
      expect(result).toMatchObject({ reachable: false, error: expect.stringMatching(/within 2000 ms/) });
    } finally {
      await slow.close();
      dir.remove();
    }
  });
});

describe('Federation and the relay closing', () => {
  /** A relay of the test's own (the shared one is closed after each test), and its data dir removed after. */
  async function withRelay(options: { pagesPerProbe?: number }, body: (relay: RelayService) => Promise<void>): Promise<void> {
    const dir = tempDataDir();
    const own = await createRelayService({ clock, dataDir: dir.dir, baseUrl: 'http://c.test', humanUrl: 'http://c.test', fetch: (...a) => fetch(...a), peers: [peer], ...(options.pagesPerProbe ? { peerPagesPerProbe: options.pagesPerProbe } : {}), logger: memoryLogger() });
    // The body closes it; closed once (a relay's close is not repeatable), here only when the body failed first.
    const closing: { once?: Promise<void> } = {};
    const closeOnce = () => (closing.once ??= own.close());
    try {
      await body({ ...own, close: closeOnce });
    } finally {
      await closeOnce();
      dir.remove();
    }
  }

  it('stops a sweep that close overtook while it listed the peers: no probe starts, nothing reaches the closed store', () =>
    withRelay({}, async (own) => {
      let healthAsked = 0;
      server.use(
        http.get(`${peer}/health`, () => {
          healthAsked++;
          return HttpResponse.json({ protocol: 'x-relay', version: '0.9.19', node_id: peerNode.nodeId });
        }),
      );
      // The sweep awaits the peer list; close begins before it has it (nothing is awaited in between).
      const sweep = own.federation.probeAll();
      const closed = own.close();
      await expect(sweep).rejects.toBeInstanceOf(FederationClosedError);
      await closed;
      expect(healthAsked).toBe(0);
      // And nothing starts once closed.
      await expect(own.federation.probeAll()).rejects.toBeInstanceOf(FederationClosedError);
      await expect(own.federation.pullNow()).rejects.toBeInstanceOf(FederationClosedError);
    }));

  it('lets the probe under way finish and starts no next probe of a pull', () =>
    withRelay({ pagesPerProbe: 1 }, async (own) => {
      let pageAsked!: () => void;
      const firstPage = new Promise<void>((r) => (pageAsked = r));
      let answerPage!: () => void;
      const pageMayAnswer = new Promise<void>((r) => (answerPage = r));
      const pages: string[] = [];
      server.use(
        http.get(`${peer}/health`, () => HttpResponse.json({ protocol: 'x-relay', version: '0.9.19', node_id: peerNode.nodeId })),
        http.get(`${peer}/events`, async ({ request }) => {
          pages.push(new URL(request.url).search);
          pageAsked();
          await pageMayAnswer;
          // One registration per page and more to come: a pull needs a probe per page.
          return HttpResponse.json({ events: [feed[0]], next: 1, has_more: true });
        }),
      );
      const pull = own.federation.pullNow();
      pull.catch(() => undefined);
      await firstPage;
      const closed = own.close();
      answerPage();
      // The first probe ran to its end (its page stored, its record written) on an open store; the pull stopped after it.
      await expect(pull).rejects.toBeInstanceOf(FederationClosedError);
      await closed;
      expect(pages).toEqual(['?since=0&limit=500']);
    }));
});
