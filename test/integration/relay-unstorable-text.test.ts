import { createClock } from '@sinonjs/fake-timers';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { call, postClaim, registerNode, registrationFor, startRelayServer, tempDataDir, voteBy, type RunningRelay, type TestNode } from '../support/relay-test-kit.js';
import { relayTableRows } from '../support/relay-tables.js';

/**
 * U+0000 or a lone UTF-16 surrogate anywhere in what a client or a peer sends the relay (decision
 * 0490). A relay on PostgreSQL answered 500 for them (text cannot hold U+0000, json neither), and
 * a peer's feed page carrying one failed whole at every probe; elsewhere a lone surrogate was
 * stored as U+FFFD, not as sent. Each is now a 422 at the string's location that stores nothing,
 * on SQLite and PostgreSQL alike, and a peer event holding one is skipped while the rest of its
 * page is stored.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const data = tempDataDir();
const operatorKey = generateNodeKey();
let relay: RunningRelay;
let operator: TestNode;
let alice: TestNode;
let item: string;
/** Alice's vote on `item`, stored before the requests that send it again with another hint. */
let firstVote: ReturnType<typeof voteBy>;

/** A peer whose feed the test sets. */
let peerFeed: { seq: number; kind: string; author: string; subject: string; data: unknown }[] = [];
let peer: Server;
let peerUrl: string;

beforeAll(async () => {
  peer = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://peer');
    res.setHeader('content-type', 'application/json');
    if (url.pathname === '/health') return res.end(JSON.stringify({ protocol: 'x-relay', version: '0.9.19', node_id: generateNodeKey().nodeId, base_url: peerUrl }));
    const since = Number(url.searchParams.get('since'));
    const events = peerFeed.filter((e) => typeof e.seq !== 'number' || e.seq > since);
    return res.end(JSON.stringify({ events, next: since, has_more: false }));
  });
  await new Promise<void>((resolve) => peer.listen(0, '127.0.0.1', resolve));
  peerUrl = `http://127.0.0.1:${(peer.address() as AddressInfo).port}`;
  relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), operators: [operatorKey.nodeId], allowPrivatePeers: true });
  operator = await registerNode(relay, clock, { key: operatorKey });
  alice = await registerNode(relay, clock, { name: 'alice' });
  item = await postClaim(relay, alice, { kind: 'statement', title: 'a claim to vote on', body: '' });
  firstVote = voteBy(alice, item, 'yes', 'vote', { t: 1, v: [operator.nodeId], i: [] }, clock);
  expect((await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: firstVote })).status).toBe(201);
});
afterAll(async () => {
  await relay.close();
  await new Promise<void>((resolve) => peer.close(() => resolve()));
  data.remove();
});

describe('U+0000 and lone surrogates are refused and store nothing', () => {
  const form = (title: string) => {
    const f = new FormData();
    f.append('title', title);
    f.append('file', new Blob([new TextEncoder().encode(`bytes titled ${JSON.stringify(title)}`)]), 'file.bin');
    return f;
  };
  const nul = { type: 'value_error', msg: 'Value error, must not contain U+0000 (NUL)' };
  const lone = { type: 'string_unicode', msg: 'Input should be a valid string, it holds a lone UTF-16 surrogate' };
  const requests: [string, () => Promise<{ status: number; body: Record<string, unknown> }>, unknown[], typeof nul][] = [
    ['a signed registration naming its node with one', () => call(relay.baseUrl, 'POST', '/register', { body: registrationFor(generateNodeKey(), relay.baseUrl, clock, 'nul\u0000name') }), ['body', 'name'], nul],
    ['a profile name', () => call(relay.baseUrl, 'POST', '/me', { body: { name: 'a\u0000' }, auth: alice.auth }), ['body', 'name'], nul],
    ['a bot name', () => call(relay.baseUrl, 'POST', '/bots', { body: { name: 'b\u0000' }, auth: alice.auth }), ['body', 'name'], nul],
    ['a claim body', () => call(relay.baseUrl, 'POST', '/items', { body: { kind: 'statement', title: 't', body: 'b\u0000' }, auth: alice.auth }), ['body', 'body'], nul],
    ['a report note', () => call(relay.baseUrl, 'POST', `/items/${item}/report`, { body: { reason: 'spam', note: '\u0000' }, auth: alice.auth }), ['body', 'note'], nul],
    ['a key of a vote hint', () => call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: { ...firstVote, hint: { deep: [{ 'k\u0000': 1 }] } } }), ['body', 'hint', 'deep', 0, 'k\u0000'], nul],
    ['a search query', () => call(relay.baseUrl, 'GET', '/search?q=%00'), ['query', 'q'], nul],
    ['an uploaded file title', () => call(relay.baseUrl, 'POST', '/items', { rawBody: form('x\u0000y'), auth: alice.auth }), ['body', 'title'], nul],
    ['a bot name with a lone surrogate', () => call(relay.baseUrl, 'POST', '/bots', { body: { name: 'b\ud800' }, auth: alice.auth }), ['body', 'name'], lone],
    ['a report note with a lone surrogate', () => call(relay.baseUrl, 'POST', `/items/${item}/report`, { body: { reason: 'spam', note: '\udc00' }, auth: alice.auth }), ['body', 'note'], lone],
    ['a key of the hint of a stored vote sent again, with a lone surrogate (a 500 on PostgreSQL)', () => call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: { ...firstVote, hint: { '\udc00k': 1 } } }), ['body', 'hint', '\udc00k'], lone],
  ];
  it.each(requests)('%s: 422 at its location, every table unchanged', async (_what, send, loc, kind) => {
    const before = await relayTableRows(data.dir);
    const r = await send();
    expect(r.status).toBe(422);
    expect((r.body.detail as { loc: unknown; msg: string }[])[0]).toMatchObject({ loc, ...kind });
    expect(await relayTableRows(data.dir)).toEqual(before);
  });
});

describe('bytes that are not UTF-8 in a JSON body', () => {
  // "caf\xe9 z": Latin-1, not UTF-8. Decoded with U+FFFD in its place, the relay stored (and hashed
  // into the claim's id) a title the client never sent.
  const latin1 = Buffer.from('{"kind":"statement","title":"caf\xe9 z","body":""}', 'latin1');
  const chunked = () =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new Uint8Array(latin1));
        controller.close();
      },
    });
  const sends: [string, () => Promise<Response>][] = [
    ['with its length (the plain parser)', () => fetch(`${relay.baseUrl}/items`, { method: 'POST', headers: { authorization: alice.auth, 'content-type': 'application/json' }, body: latin1 })],
    ['chunked (express.json)', () => fetch(`${relay.baseUrl}/items`, { method: 'POST', headers: { authorization: alice.auth, 'content-type': 'application/json' }, body: chunked(), duplex: 'half' } as RequestInit)],
  ];
  it.each(sends)("sent %s: FastAPI's 400, every table unchanged", async (_how, send) => {
    const before = await relayTableRows(data.dir);
    const r = await send();
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ detail: 'There was an error parsing the body' });
    expect(await relayTableRows(data.dir)).toEqual(before);
  });
});

describe('a peer event holding U+0000 or a lone surrogate', () => {
  it('is skipped, and the rest of the page is stored (it used to fail the whole page on PostgreSQL, at every probe)', async () => {
    const named = generateNodeKey();
    const plain = generateNodeKey();
    const nodeEvent = (seq: number, key: typeof named, name: string) => ({ seq, kind: 'node', author: key.nodeId, subject: key.nodeId, data: { registration: registrationFor(key, peerUrl, clock, name) } });
    // A vote's hint is unsigned: a vote whose hint holds one is kept without it (decision 0435).
    const vote = voteBy(alice, item, 'no', 'vote', { t: 1, v: [operator.nodeId], i: [] }, clock);
    const voteEvent = { seq: 3, kind: 'vote', author: alice.nodeId, subject: item, data: { vote: { ...vote, hint: { 'k\u0000': 1, '\ud800': 2 } } } };
    const claim = { kind: 'statement', title: 'lone \udc00', body: '' };
    const claimEvent = { seq: 4, kind: 'item', author: alice.nodeId, subject: 'f'.repeat(64), data: { item: { id: 'f'.repeat(64), type: 'claim', ...claim, author: alice.nodeId, origin: null, created_at: '2026-11-20T12:00:00.000Z', authorship: null } } };
    // Last, so its reason is the peer's `last_error`: that text must not carry the key itself.
    const keyEvent = { seq: 5, kind: 'slice', author: alice.nodeId, subject: alice.nodeId, data: { 'k\u0000': 1 } };
    peerFeed = [nodeEvent(1, named, 'nul\u0000name'), nodeEvent(2, plain, 'plain'), voteEvent, claimEvent, keyEvent];
    expect((await call(relay.baseUrl, 'POST', '/reach', { body: { url: peerUrl }, auth: operator.auth })).status).toBe(201);
    const pulled = await call<{ results: { pulled: number; rejected: number; caught_up: boolean; error: string | null }[] }>(relay.baseUrl, 'POST', '/federation/pull', { body: { url: peerUrl }, auth: operator.auth });
    expect(pulled.status).toBe(200);
    expect(pulled.body.results[0]).toMatchObject({ pulled: 2, rejected: 3, caught_up: true, error: 'event 5 (slice): holds U+0000 in data at ["k\\u0000"], which relays do not store' });
    expect((await call(relay.baseUrl, 'GET', `/nodes/${named.nodeId}`)).status).toBe(404);
    expect((await call(relay.baseUrl, 'GET', `/nodes/${plain.nodeId}`)).status).toBe(200);
    const feed = await call<{ events: { kind: string; data: { vote?: Record<string, unknown> } }[] }>(relay.baseUrl, 'GET', `/events?authors=${alice.nodeId}&limit=500`);
    expect(feed.body.events.filter((e) => e.kind === 'vote').map((e) => e.data.vote)).toEqual([firstVote, vote]);
    // Skipped, not refused: the document is true, so the peer keeps its standing.
    const record = (await call<{ peers: { url: string; offences: number; last_error: string }[] }>(relay.baseUrl, 'GET', '/reach')).body.peers.find((p) => p.url === peerUrl);
    expect(record?.offences).toBe(0);
    expect(record?.last_error).toContain('["k\\u0000"]');
  });

  it('a page whose seq is such text is refused as an offence (the reason recorded it as sent, which PostgreSQL could not store)', async () => {
    peerFeed = [{ seq: 'x\u0000' as unknown as number, kind: 'node', author: '', subject: '', data: {} }];
    const pulled = await call<{ results: { error: string | null }[] }>(relay.baseUrl, 'POST', '/federation/pull', { body: { url: peerUrl }, auth: operator.auth });
    expect(pulled.body.results[0]?.error).toContain('answered seq "x\\u0000"');
    const record = (await call<{ peers: { url: string; offences: number }[] }>(relay.baseUrl, 'GET', '/reach')).body.peers.find((p) => p.url === peerUrl);
    expect(record?.offences).toBe(1);
  });

  it('an event whose kind is such text is skipped and named as JSON (recording it as sent was a 500 on PostgreSQL)', async () => {
    peerFeed = [{ seq: 6, kind: 'k\u0000', author: '', subject: '', data: {} }];
    const pulled = await call<{ results: { rejected: number; error: string | null }[] }>(relay.baseUrl, 'POST', '/federation/pull', { body: { url: peerUrl }, auth: operator.auth });
    expect(pulled.status).toBe(200);
    expect(pulled.body.results[0]).toMatchObject({ rejected: 1, error: 'event 6 ("k\\u0000"): unknown event kind "k\\u0000"' });
  });

  it('an event whose kind is 100 000 characters is named cut, so GET /reach does not show it (it showed it twice)', async () => {
    peerFeed = [{ seq: 7, kind: 'k'.repeat(100_000), author: '', subject: '', data: {} }];
    const pulled = await call<{ results: { rejected: number; error: string | null }[] }>(relay.baseUrl, 'POST', '/federation/pull', { body: { url: peerUrl }, auth: operator.auth });
    const cut = `"${'k'.repeat(63)}…`;
    expect(pulled.body.results[0]).toMatchObject({ rejected: 1, error: `event 7 (${cut}): unknown event kind ${cut}` });
    expect((await call(relay.baseUrl, 'GET', '/reach')).text.length).toBeLessThan(2000);
  });

  it('an event whose unstorable key is 100 000 characters long names its location cut (last_error held the key whole)', async () => {
    peerFeed = [{ seq: 8, kind: 'slice', author: alice.nodeId, subject: alice.nodeId, data: { [`${'k'.repeat(100_000)}\u0000`]: 1 } }];
    const pulled = await call<{ results: { rejected: number; error: string | null }[] }>(relay.baseUrl, 'POST', '/federation/pull', { body: { url: peerUrl }, auth: operator.auth });
    expect(pulled.body.results[0]).toMatchObject({ rejected: 1, error: `event 8 (slice): holds U+0000 in data at ["${'k'.repeat(62)}…, which relays do not store` });
    expect((await call(relay.baseUrl, 'GET', '/reach')).text.length).toBeLessThan(2000);
  });
});
