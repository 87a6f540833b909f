import { createClock } from '@sinonjs/fake-timers';
import { readdirSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import type { SliceDeclaration } from '../../core/relay/slice-declaration.js';
import { type Vote, signVote } from '../../core/relay/vote.js';
import { claimId } from '../../core/relay/claim.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { quorumSetHash } from '../../core/relay/quorum-set.js';
import { signItemAuthorship } from '../../core/relay/item-authorship.js';
import { signDocument } from '../../server/relay/domain/signed-document.js';
import { call, claimAuthorship, postClaim, registerNode, sliceDeclarationBy, startRelayServer, tempDataDir, voteBy, type RunningRelay, type TestNode } from '../support/relay-test-kit.js';
import { relayTableRows } from '../support/relay-tables.js';

/**
 * Issue 18, "Trust": two honest relays (A and B, real HTTP on loopback) and a lying one, a small
 * HTTP server that replays A's genuine feed with forgeries mixed in and its pages out of order:
 * authorship signed by the wrong key or borrowed from another item, items and votes by nodes nobody
 * registered, a slice declaration altered after signing or contradicted by its event, a vote whose
 * signature does not verify, a stale declaration replayed, and a page whose seqs go back. Every
 * table of both honest relays (their peer records aside) and their file stores are the same
 * before and after they pull from the liar; the liar loses its standing, is no longer pulled from,
 * and is pulled from again only once an operator adds it again.
 */
const fake = createClock(Date.UTC(2026, 10, 20, 12));
const clock = clockFromFakeTimers(fake);
const operatorKey = generateNodeKey();
const mallory = generateNodeKey(); // never registered anywhere
const liarKey = generateNodeKey();
const dirs = [tempDataDir('relay-honest-a-'), tempDataDir('relay-honest-b-')];
const loggers = [memoryLogger(), memoryLogger()];
let honest: RunningRelay[] = [];
let operators: TestNode[] = [];
let alice: TestNode;
let bob: TestNode;

/** The liar: whatever feed the test gives it, served in pages of 5, and every request it saw. */
let liarFeed: { seq: number; kind: string; author: string; subject: string; data: unknown }[] = [];
/** Served once the feed is read to its end: a replayed event, its seq going back. */
let liarTail: { seq: number; kind: string; author: string; subject: string; data: unknown } | undefined;
const liarRequests: string[] = [];
let liar: Server;
let liarUrl: string;

beforeAll(async () => {
  liar = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://liar');
    liarRequests.push(url.pathname + url.search);
    res.setHeader('content-type', 'application/json');
    if (url.pathname === '/health') return res.end(JSON.stringify({ protocol: 'x-relay', version: '0.9.19', node_id: liarKey.nodeId, base_url: liarUrl }));
    if (url.pathname === '/events') {
      const since = Number(url.searchParams.get('since'));
      const rest = liarFeed.filter((e) => e.seq > since);
      const events = rest.length === 0 && liarTail ? [liarTail] : rest.slice(0, 5);
      // It always says there is more, so the honest relay asks for the page that goes back.
      return res.end(JSON.stringify({ events, next: events.at(-1)?.seq ?? since, has_more: rest.length > 5 || liarTail !== undefined }));
    }
    res.statusCode = 404;
    res.end(JSON.stringify({ detail: 'not found' }));
  });
  await new Promise<void>((resolve) => liar.listen(0, '127.0.0.1', resolve));
  liarUrl = `http://127.0.0.1:${(liar.address() as AddressInfo).port}`;
  honest = await Promise.all(dirs.map((d, k) => startRelayServer({ clock, dataDir: d.dir, logger: loggers[k]!, operators: [operatorKey.nodeId], allowPrivatePeers: true })));
  operators = await Promise.all(honest.map((r) => registerNode(r, clock, { key: operatorKey })));
  alice = await registerNode(honest[0]!, clock, { name: 'alice' });
  bob = await registerNode(honest[1]!, clock, { name: 'bob' });
  for (const [k, r] of honest.entries()) {
    const other = honest[1 - k]!;
    expect((await call(r.baseUrl, 'POST', '/reach', { body: { url: other.baseUrl }, auth: operators[k]!.auth })).status).toBe(201);
  }
});
afterAll(async () => {
  await Promise.all(honest.map((r) => r.close()));
  await new Promise<void>((resolve) => liar.close(() => resolve()));
  for (const d of dirs) d.remove();
});

const pull = (k: number, url: string) => call<{ results: { error: string | null; pulled: number; rejected: number }[] }>(honest[k]!.baseUrl, 'POST', '/federation/pull', { body: { url }, auth: operators[k]!.auth });

/**
 * Every row of every table, and the file store; but `peers` (the liar's record there is meant to
 * change), `membership` (a counter its triggers bump when a peer is added or reports its node id)
 * and, on PostgreSQL, `write_generation` (a count of commits, the peer record's among them).
 */
async function snapshot(k: number): Promise<Record<string, unknown[]>> {
  const rows = await relayTableRows(dirs[k]!.dir, { except: ['peers', 'membership', 'write_generation'] });
  return { ...rows, files: readdirSync(join(dirs[k]!.dir, 'files')).sort() };
}

type Peer = { url: string; offences: number; last_offence: string | null; suspended_at: string | null };
const liarRecord = async (k: number) => ((await call<{ peers: Peer[] }>(honest[k]!.baseUrl, 'GET', '/reach')).body.peers.find((p) => p.url === liarUrl))!;

describe('a lying relay among honest ones', () => {
  const signed = { kind: 'statement', title: 'the uno bench resets in 2 s', body: 'measured 20 times' };
  const unsigned = { kind: 'question', title: 'posted without a signature', body: '' };
  let declarations: SliceDeclaration[];

  it('honest relays exchange signed items and declarations, and keep unsigned ones to themselves', async () => {
    await postClaim(honest[0]!, alice, signed);
    await postClaim(honest[0]!, alice.auth, unsigned);
    const t0 = clock.nowMs();
    declarations = [sliceDeclarationBy(bob, { t: 1, v: [alice.nodeId] }, t0 - 1000), sliceDeclarationBy(bob, { t: 1, v: [alice.nodeId, honest[0]!.service.nodeId] }, t0)];
    for (const d of declarations) expect((await call(honest[1]!.baseUrl, 'POST', '/slice/declare', { body: d })).status).toBe(200);
    expect((await call(honest[0]!.baseUrl, 'POST', `/items/${claimId(signed)}/vote`, { body: voteBy(alice, claimId(signed), 'yes', 'vote', { t: 1, v: [bob.nodeId], i: [] }, clock) })).status).toBe(201);
    for (let round = 0; round < 2; round++) for (const k of [0, 1]) expect((await pull(k, honest[1 - k]!.baseUrl)).status).toBe(200);

    const there = await call(honest[1]!.baseUrl, 'GET', `/items/${claimId(signed)}`);
    expect(there.body).toMatchObject({ author: alice.nodeId, origin: honest[0]!.baseUrl, authorship: claimAuthorship(alice, signed) });
    expect((await call(honest[1]!.baseUrl, 'GET', `/items/${claimId(unsigned)}`)).status).toBe(404);
    const bobAtA = await call(honest[0]!.baseUrl, 'GET', `/nodes/${bob.nodeId}`);
    expect(bobAtA.body.slice).toEqual({ hash: declarations[1]!.slice_hash, quorum_set: declarations[1]!.slice });
  });

  it('nothing the liar serves changes what the honest relays store, and the liar loses its standing', async () => {
    const genuine = await feedOf(honest[0]!);
    const aliceVote = genuine.find((e) => e.kind === 'vote' && (e.data as { vote: Vote }).vote.voter === alice.nodeId)!.data as { vote: Vote };
    const forgedClaim = { kind: 'statement', title: 'alice never wrote this', body: '' };
    const borrowedClaim = { kind: 'statement', title: 'borrowed authorship', body: '' };
    const malloryClaim = { kind: 'statement', title: 'by nobody anyone knows', body: '' };
    const claimEvent = (claim: typeof signed, author: string, authorship: unknown) => ({
      kind: 'item', author, subject: claimId(claim), data: { item: { id: claimId(claim), type: 'claim', ...claim, author, origin: null, created_at: '2026-11-20T12:00:00.000Z', authorship } },
    });
    const altered = { t: 1, v: [mallory.nodeId], i: [] };
    const forgeries = [
      // Authorship: signed by another key, borrowed from another item, by a node nobody registered, or absent.
      claimEvent(forgedClaim, alice.nodeId, { ...signItemAuthorship({ schema: 'x.item/1', item: claimId(forgedClaim), type: 'claim', author: mallory.nodeId }, mallory.secretKey), author: alice.nodeId }),
      claimEvent(borrowedClaim, alice.nodeId, claimAuthorship(alice, signed)),
      claimEvent(malloryClaim, mallory.nodeId, claimAuthorship(mallory, malloryClaim)),
      claimEvent(unsigned, alice.nodeId, null),
      // File items: one without a statement (skipped, never downloaded) and one whose statement is forged (refused, never downloaded).
      { kind: 'item', author: alice.nodeId, subject: 'd'.repeat(64), data: { item: { id: 'd'.repeat(64), type: 'file', kind: 'file', title: 'unsigned.bin', author: alice.nodeId, bytes: 3, media_type: 'application/octet-stream', authorship: null } } },
      { kind: 'item', author: alice.nodeId, subject: 'e'.repeat(64), data: { item: { id: 'e'.repeat(64), type: 'file', kind: 'file', title: 'fw.bin', author: alice.nodeId, bytes: 3, media_type: 'application/octet-stream', authorship: { ...signItemAuthorship({ schema: 'x.item/1', item: 'e'.repeat(64), type: 'file', author: mallory.nodeId, title: 'fw.bin', media_type: 'application/octet-stream' }, mallory.secretKey), author: alice.nodeId } } } },
      // Slices: bob's declaration altered after signing; one contradicted by its event; the stale one replayed.
      { kind: 'slice', author: bob.nodeId, subject: quorumSetHash(altered), data: { node_id: bob.nodeId, slice: altered, slice_hash: quorumSetHash(altered), updated_ms: clock.nowMs() + 1, declaration: { ...declarations[1]!, slice: altered, slice_hash: quorumSetHash(altered), updated_ms: clock.nowMs() + 1 } } },
      { kind: 'slice', author: bob.nodeId, subject: quorumSetHash(altered), data: { node_id: bob.nodeId, slice: altered, slice_hash: quorumSetHash(altered), updated_ms: clock.nowMs() + 1, declaration: declarations[1]! } },
      { kind: 'slice', author: bob.nodeId, subject: declarations[0]!.slice_hash, data: { node_id: bob.nodeId, slice: declarations[0]!.slice, slice_hash: declarations[0]!.slice_hash, updated_ms: declarations[0]!.updated_ms, declaration: declarations[0]! } },
      // Votes: alice's statement with its value flipped; a well-signed one by a node nobody registered.
      { kind: 'vote', author: alice.nodeId, subject: claimId(signed), data: { vote: { ...aliceVote.vote, value: 'no' } } },
      { kind: 'vote', author: mallory.nodeId, subject: claimId(signed), data: { vote: signVote({ ...aliceVote.vote, voter: mallory.nodeId, slice: { t: 1, v: [alice.nodeId], i: [] } }, mallory.secretKey) } },
      // A registration changed after signing.
      { kind: 'node', author: mallory.nodeId, subject: mallory.nodeId, data: { registration: { ...signDocument({ schema: 'x.register/1', node_id: mallory.nodeId, relay: liarUrl, created_at: Math.floor(clock.nowMs() / 1000) }, mallory.secretKey), name: 'added later' } } },
    ];
    // The liar replays A's whole genuine feed first (renumbered), then the forgeries, then goes back.
    liarFeed = [...genuine, ...forgeries].map((e, k) => ({ ...e, seq: k + 1 }));
    liarTail = { ...liarFeed[2]!, seq: 3 };
    const before = [await snapshot(0), await snapshot(1)];
    for (const [k, r] of honest.entries()) expect((await call(r.baseUrl, 'POST', '/reach', { body: { url: liarUrl }, auth: operators[k]!.auth })).status).toBe(201);

    for (const k of [0, 1]) {
      const answer = await pull(k, liarUrl);
      expect(answer.status).toBe(200);
      expect(answer.body.results[0]!.error).toMatch(/seq 3 after \d+; refusing the page/);
    }
    // Nine false documents and the page going back: ten offences, the default bound.
    for (const k of [0, 1]) {
      expect(await snapshot(k), `relay ${k}'s stored state`).toEqual(before[k]);
      expect(await liarRecord(k)).toMatchObject({ offences: 10, suspended_at: expect.any(String), last_offence: expect.stringMatching(/refusing the page/) });
      const warnings = loggers[k]!.lines.filter((l) => l.startsWith(`warn: relay: refused a document from peer ${liarUrl}`));
      expect(warnings).toHaveLength(10);
    }
    expect(liarRequests.filter((r) => r.startsWith('/items/'))).toEqual([]);

    // Suspended: pulling asks the liar nothing, and says why.
    const asked = liarRequests.length;
    const suspended = await pull(0, liarUrl);
    expect(suspended.body.results[0]!.error).toMatch(/^suspended at .* after 10 refused documents .* POST \/reach/);
    expect(liarRequests.length).toBe(asked);

    // An operator adds it again: its standing starts afresh and it is pulled from again.
    expect((await call(honest[0]!.baseUrl, 'POST', '/reach', { body: { url: liarUrl }, auth: operators[0]!.auth })).status).toBe(200);
    expect(await liarRecord(0)).toMatchObject({ offences: 0, suspended_at: null, last_offence: expect.stringMatching(/refusing the page/) });
    await pull(0, liarUrl);
    expect(liarRequests.length).toBeGreaterThan(asked);
    expect(await liarRecord(0)).toMatchObject({ offences: 1, suspended_at: null });
    expect(await snapshot(0)).toEqual(before[0]);
  });
});

/** A relay's whole feed, as a peer reads it. */
async function feedOf(relay: RunningRelay): Promise<{ kind: string; author: string; subject: string; data: unknown }[]> {
  const events: { kind: string; author: string; subject: string; data: unknown }[] = [];
  for (let since = 0; ; ) {
    const page = await call<{ events: { seq: number; kind: string; author: string; subject: string; data: unknown }[]; next: number; has_more: boolean }>(relay.baseUrl, 'GET', `/events?since=${since}&limit=500`);
    events.push(...page.body.events.map(({ kind, author, subject, data }) => ({ kind, author, subject, data })));
    if (!page.body.has_more) return events;
    since = page.body.next;
  }
}
