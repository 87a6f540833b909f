import { createClock } from '@sinonjs/fake-timers';
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { type QuorumSet, quorumSetHash } from '../../core/relay/quorum-set.js';
import { claimId } from '../../core/relay/claim.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { parseItemAuthorship, verifyItemAuthorship } from '../../core/relay/item-authorship.js';
import { parseSliceDeclaration, verifySliceDeclaration } from '../../core/relay/slice-declaration.js';
import { signVote } from '../../core/relay/vote.js';
import { call, claimAuthorship, fileAuthorship, registerNode, sliceDeclarationBy, startRelayServer, tempDataDir, type RunningRelay, type TestNode } from '../support/relay-test-kit.js';

/**
 * Issue 18, "Trust": the author's x.item/1 statement on POST /items (JSON and multipart), the
 * node's x.slice/1 declaration on POST /slice/declare, and a vote naming its slice by hash
 * reaching a relay that never saw the slice (GET /events carries the quorum set with it).
 */
const fake = createClock(Date.UTC(2026, 10, 20, 12));
const clock = clockFromFakeTimers(fake);
const dirs = [tempDataDir('relay-signed-a-'), tempDataDir('relay-signed-b-')];
const operatorKey = generateNodeKey();
let relays: RunningRelay[] = [];
let alice: TestNode;
let bob: TestNode;

beforeAll(async () => {
  relays = await Promise.all(dirs.map((d) => startRelayServer({ clock, dataDir: d.dir, logger: memoryLogger(), operators: [operatorKey.nodeId], allowPrivatePeers: true })));
  alice = await registerNode(relays[0]!, clock);
  bob = await registerNode(relays[0]!, clock);
});
afterAll(async () => {
  await Promise.all(relays.map((r) => r.close()));
  for (const d of dirs) d.remove();
});

const base = () => relays[0]!.baseUrl;
const detail = (body: unknown) => (body as { detail: { loc: unknown[]; msg: string }[] }).detail[0]!;

describe('POST /items with the author\'s x.item/1 statement', () => {
  it('stores and shows a claim\'s verified statement; refuses a forged, another node\'s or another item\'s one with 422', async () => {
    const claim = { kind: 'statement', title: 'signed claim', body: 'by alice' };
    const statement = claimAuthorship(alice, claim);
    const forged = { ...statement, sig: claimAuthorship(bob, { ...claim, title: 'x' }).sig };
    const refusals: [unknown, TestNode, unknown[]][] = [
      [forged, alice, ['body', 'authorship', 'sig']],
      [claimAuthorship(bob, claim), alice, ['body', 'authorship', 'author']],
      [claimAuthorship(alice, { ...claim, title: 'another claim' }), alice, ['body', 'authorship', 'item']],
      [{ ...statement, extra: 1 }, alice, ['body', 'authorship', 'extra']],
    ];
    for (const [authorship, node, loc] of refusals) {
      const refused = await call(base(), 'POST', '/items', { body: { ...claim, authorship }, auth: node.auth });
      expect(refused.status, JSON.stringify(loc)).toBe(422);
      expect(detail(refused.body).loc).toEqual(loc);
    }
    expect((await call(base(), 'GET', `/items/${claimId(claim)}`)).status).toBe(404);
    const posted = await call(base(), 'POST', '/items', { body: { ...claim, authorship: statement }, auth: alice.auth });
    expect(posted.status).toBe(201);
    expect(posted.body).toMatchObject({ id: claimId(claim), author: alice.nodeId, authorship: statement });
    expect((await call(base(), 'GET', `/items/${claimId(claim)}`)).body.authorship).toEqual(statement);
  });

  it('adds the statement to the author\'s own item posted without one, and publishes it again', async () => {
    const claim = { kind: 'question', title: 'signed later', body: '' };
    expect((await call(base(), 'POST', '/items', { body: claim, auth: alice.auth })).body).toMatchObject({ created: true, authorship: null });
    // Another node's statement for alice's item changes nothing.
    const other = await call(base(), 'POST', '/items', { body: { ...claim, authorship: claimAuthorship(bob, claim) }, auth: bob.auth });
    expect(other.body).toMatchObject({ created: false, author: alice.nodeId, authorship: null });
    const signed = await call(base(), 'POST', '/items', { body: { ...claim, authorship: claimAuthorship(alice, claim) }, auth: alice.auth });
    expect(signed.status).toBe(200);
    expect(signed.body).toMatchObject({ created: false, authorship: claimAuthorship(alice, claim) });
    const events = (await call<{ events: { kind: string; subject: string; data: { item: { authorship: unknown } } }[] }>(base(), 'GET', `/events?authors=${alice.nodeId}&limit=500`)).body.events;
    expect(events.filter((e) => e.kind === 'item' && e.subject === claimId(claim)).map((e) => e.data.item.authorship)).toEqual([null, claimAuthorship(alice, claim)]);
  });

  it('takes a file\'s statement from the multipart form, signing its title and media type; a refused one leaves no file', async () => {
    const bytes = new TextEncoder().encode('signed firmware');
    const id = createHash('sha256').update(bytes).digest('hex');
    const upload = (authorship: unknown, type = 'application/octet-stream') => {
      const form = new FormData();
      form.append('title', 'fw.bin');
      form.append('authorship', typeof authorship === 'string' ? authorship : JSON.stringify(authorship));
      form.append('file', new Blob([bytes], { type }), 'fw.bin');
      return call(base(), 'POST', '/items', { rawBody: form, auth: alice.auth });
    };
    const files = () => readdirSync(join(dirs[0]!.dir, 'files')).sort();
    const before = files();
    const wrongTitle = await upload(fileAuthorship(alice, { id, title: 'other.bin' }));
    expect([wrongTitle.status, detail(wrongTitle.body).loc]).toEqual([422, ['body', 'authorship', 'title']]);
    const wrongType = await upload(fileAuthorship(alice, { id, title: 'fw.bin' }), 'Text/HTML; charset=utf-8');
    expect([wrongType.status, detail(wrongType.body).loc, detail(wrongType.body).msg]).toEqual([422, ['body', 'authorship', 'media_type'], expect.stringContaining('"text/html"')]);
    const notJson = await upload('{');
    expect([notJson.status, detail(notJson.body).loc]).toEqual([422, ['body', 'authorship']]);
    expect(files()).toEqual(before);
    const stored = await upload(fileAuthorship(alice, { id, title: 'fw.bin' }));
    expect(stored.status).toBe(201);
    expect(stored.body).toMatchObject({ id, title: 'fw.bin', media_type: 'application/octet-stream', authorship: fileAuthorship(alice, { id, title: 'fw.bin' }) });
  });
});

describe('POST /slice/declare', () => {
  const sliceOf = (node: TestNode): QuorumSet => ({ t: 1, v: [node.nodeId], i: [] });

  it('publishes a verified declaration; the newest wins and a stale one is a 409', async () => {
    const t = clock.nowMs();
    const first = sliceDeclarationBy(alice, sliceOf(bob), t);
    expect((await call(base(), 'POST', '/slice/declare', { body: first })).body).toEqual({ node_id: alice.nodeId, slice_hash: quorumSetHash(sliceOf(bob)), slice: sliceOf(bob), t_auto: false });
    // Posting the same declaration again is idempotent.
    expect((await call(base(), 'POST', '/slice/declare', { body: first })).status).toBe(200);
    const newer = sliceDeclarationBy(alice, { t: 1, v: [bob.nodeId, relays[0]!.service.nodeId] }, t + 1);
    expect((await call(base(), 'POST', '/slice/declare', { body: newer })).status).toBe(200);
    const stale = await call(base(), 'POST', '/slice/declare', { body: sliceDeclarationBy(alice, { t: 1, v: [relays[0]!.service.nodeId] }, t) });
    expect(stale.status).toBe(409);
    expect((await call(base(), 'GET', `/nodes/${alice.nodeId}`)).body.slice).toEqual({ hash: newer.slice_hash, quorum_set: newer.slice });
  });

  it('refuses a forged signature, a hash that is not the slice\'s, a future updated_ms (422) and an unknown node (403)', async () => {
    const good = sliceDeclarationBy(bob, sliceOf(alice), clock.nowMs());
    const cases: [unknown, number, unknown[] | null][] = [
      [{ ...good, updated_ms: good.updated_ms + 1 }, 422, ['body', 'sig']],
      [{ ...good, slice_hash: quorumSetHash(sliceOf(bob)) }, 422, ['body', 'slice_hash']],
      [sliceDeclarationBy(bob, sliceOf(alice), clock.nowMs() + 301_000), 422, ['body', 'updated_ms']],
      [sliceDeclarationBy(generateNodeKey(), sliceOf(alice), clock.nowMs()), 403, null],
    ];
    for (const [body, status, loc] of cases) {
      const answer = await call(base(), 'POST', '/slice/declare', { body });
      expect(answer.status, answer.text).toBe(status);
      if (loc) expect(detail(answer.body).loc).toEqual(loc);
    }
  });
});

describe('GET /examples', () => {
  it('shows a claim with its author\'s statement and a slice declaration, both verifying', async () => {
    const ex = (await call<{ claim: { request: { body: { authorship: unknown } } }; declaration: { request: { body: unknown } } }>(base(), 'GET', '/examples')).body;
    const authorship = parseItemAuthorship(ex.claim.request.body.authorship);
    expect(authorship.ok && verifyItemAuthorship(authorship.value)).toBe(true);
    const declaration = parseSliceDeclaration(ex.declaration.request.body);
    expect(declaration.ok && verifySliceDeclaration(declaration.value)).toBe(true);
  });
});

describe('a vote naming its slice by hash, pulled by a relay that never saw the slice', () => {
  it('travels with the quorum set in GET /events and is stored there', async () => {
    const claim = { kind: 'statement', title: 'slice by hash', body: '' };
    expect((await call(base(), 'POST', '/items', { body: { ...claim, authorship: claimAuthorship(bob, claim) }, auth: bob.auth })).status).toBe(201);
    // Published with a credential only: the slice itself does not travel to peers.
    const published = await call(base(), 'POST', '/slice', { body: { t: 1, v: [alice.nodeId, operatorKey.nodeId] }, auth: bob.auth });
    const hash = String(published.body.slice_hash);
    const vote = signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item: claimId(claim), voter: bob.nodeId, value: 'yes', phase: 'vote', slice_hash: hash, created_at: Math.floor(clock.nowMs() / 1000) }, bob.secretKey);
    expect((await call(base(), 'POST', `/items/${claimId(claim)}/vote`, { body: vote })).status).toBe(201);
    const operator = await registerNode(relays[1]!, clock, { key: operatorKey });
    expect((await call(relays[1]!.baseUrl, 'POST', '/reach', { body: { url: base() }, auth: operator.auth })).status).toBe(201);
    const pulled = await call<{ results: { error: string | null }[] }>(relays[1]!.baseUrl, 'POST', '/federation/pull', { body: {}, auth: operator.auth });
    expect(pulled.body.results[0]!.error).toMatch(/without the node's signed declaration|without its author's signed statement/);
    const there = await call(relays[1]!.baseUrl, 'GET', `/items/${claimId(claim)}`);
    expect(there.body.counts).toMatchObject({ yes: { vote: 1 } });
    expect((await call(relays[1]!.baseUrl, 'GET', `/nodes/${bob.nodeId}`)).body.slice).toBeNull();
    const peer = (await call<{ peers: { offences: number }[] }>(relays[1]!.baseUrl, 'GET', '/reach')).body.peers[0]!;
    expect(peer.offences).toBe(0);
  });
});
