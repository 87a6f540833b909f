import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { quorumSetHash } from '../../core/relay/quorum-set.js';
import { signVote } from '../../core/relay/vote.js';
import { call, nowSeconds, postClaim, registerNode, relayForTests, startRelayServer, tempDataDir, voteBy } from '../support/relay-test-kit.js';
import { memoryLogger } from '../../server/http/logger.js';

/** Signed votes, bulletins and the relay node's own statements, and slices, over HTTP. */
const fake = createClock(Date.UTC(2026, 10, 20, 12));
const clock = clockFromFakeTimers(fake);
const { relay, alice } = relayForTests({ clock, nodes: ['alice'] });
let seq = 0;
const uniqueTitle = () => `claim ${seq++}`;

const post = (path: string, body: unknown, auth = alice.auth) => call(relay.baseUrl, 'POST', path, { body, auth });

describe('votes and bulletins', () => {
  const slice = () => ({ t: 1, v: [relay.service.nodeId], i: [] });

  it('stores a signed vote; a duplicate is idempotent; a changed hint still verifies', async () => {
    const id = await postClaim(relay, alice.auth, { kind: 'question', title: uniqueTitle(), body: '' });
    const vote = voteBy(alice, id, 'yes', 'vote', slice(), clock);
    const first = await post(`/items/${id}/vote`, vote);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ stored: true, duplicate: false, equivocation: false });
    const again = await post(`/items/${id}/vote`, { ...vote, hint: 'relayed by someone' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ stored: false, duplicate: true });
    const bulletin = await call(relay.baseUrl, 'GET', `/items/${id}/bulletin/${alice.nodeId}`);
    expect(bulletin.body).toMatchObject({ state: 'voted', value: 'yes', counts: { yes: { vote: 1 } }, slice_hash: quorumSetHash(slice()) });
  });

  it('refuses a tampered vote, a vote for another item, and an unregistered voter', async () => {
    const id = await postClaim(relay, alice.auth, { kind: 'question', title: uniqueTitle(), body: '' });
    const other = await postClaim(relay, alice.auth, { kind: 'question', title: uniqueTitle(), body: '' });
    const vote = voteBy(alice, id, 'yes', 'vote', slice(), clock);
    const tampered = await post(`/items/${id}/vote`, { ...vote, value: 'no' });
    expect(tampered.status).toBe(422);
    expect((tampered.body.detail as unknown[])[0]).toMatchObject({ loc: ['body', 'sig'] });
    expect((await post(`/items/${other}/vote`, vote)).status).toBe(422);
    const stranger = generateNodeKey();
    const unregistered = await post(`/items/${id}/vote`, voteBy(stranger, id, 'yes', 'vote', slice(), clock));
    expect(unregistered.status).toBe(403);
    expect((await post(`/items/${'9'.repeat(64)}/vote`, vote)).status).toBe(404);
    const bulletin = await call(relay.baseUrl, 'GET', `/items/${id}/bulletin/${alice.nodeId}`);
    expect(bulletin.body).toMatchObject({ state: 'uncommitted' });
  });

  it('keeps both statements of an equivocator as evidence and lists it', async () => {
    const id = await postClaim(relay, alice.auth, { kind: 'question', title: uniqueTitle(), body: '' });
    const bob = await registerNode(relay, clock);
    await post(`/items/${id}/vote`, voteBy(bob, id, 'yes', 'vote', slice(), clock));
    const second = await post(`/items/${id}/vote`, voteBy(bob, id, 'no', 'vote', slice(), clock));
    expect(second.status).toBe(201);
    expect(second.body.equivocation).toBe(true);
    const bulletin = await call(relay.baseUrl, 'GET', `/items/${id}/bulletin/${relay.service.nodeId}`);
    expect(bulletin.body.equivocators).toEqual([bob.nodeId]);
    expect(bulletin.body.counts).toMatchObject({ yes: { vote: 1 }, no: { vote: 1 } });
  });

  it('the relay node accepts and confirms as its slice does, signing its own statements', async () => {
    // A dedicated relay whose node trusts exactly two humans (2 of 2).
    const dir = tempDataDir();
    const h1 = generateNodeKey();
    const h2 = generateNodeKey();
    const own = await startRelayServer({ clock, dataDir: dir.dir, logger: memoryLogger(), selfSlice: { t: 2, v: [h1.nodeId, h2.nodeId].sort(), i: [] } });
    try {
      const n1 = await registerNode(own, clock, { key: h1 });
      const n2 = await registerNode(own, clock, { key: h2 });
      const id = await postClaim(own, n1.auth, { kind: 'statement', title: 'LED blinks at 1 Hz', body: '' });
      const humansSlice = (other: string) => ({ t: 1, v: [other], i: [] });
      for (const [n, other] of [[n1, n2], [n2, n1]] as const) {
        await call(own.baseUrl, 'POST', `/items/${id}/vote`, { body: voteBy(n, id, 'yes', 'vote', humansSlice(other.nodeId), clock) });
      }
      // Each human's bulletin tells its client to accept; the relay has not moved yet.
      const b1 = await call(own.baseUrl, 'GET', `/items/${id}/bulletin/${n1.nodeId}`);
      expect(b1.body).toMatchObject({ state: 'accepted', accepted_via: 'quorum', to_emit: [{ value: 'yes', phase: 'accept' }] });
      expect((await call(own.baseUrl, 'GET', `/items/${id}/bulletin/${own.service.nodeId}`)).body.state).toBe('uncommitted');
      // With t = 2 of 2, one accepting human is a v-blocking set: the relay accepts...
      const first = await call(own.baseUrl, 'POST', `/items/${id}/vote`, { body: voteBy(n1, id, 'yes', 'accept', humansSlice(n2.nodeId), clock) });
      expect(first.body.relay_emitted).toEqual([{ value: 'yes', phase: 'accept' }]);
      expect((await call(own.baseUrl, 'GET', `/items/${id}/bulletin/${own.service.nodeId}`)).body.state).toBe('accepted');
      // ...and confirms once its whole slice accepted (a quorum of accepters including itself).
      const last = await call(own.baseUrl, 'POST', `/items/${id}/vote`, { body: voteBy(n2, id, 'yes', 'accept', humansSlice(n1.nodeId), clock) });
      expect(last.body.relay_emitted).toEqual([{ value: 'yes', phase: 'confirm' }]);
      const relayBulletin = await call(own.baseUrl, 'GET', `/items/${id}/bulletin/${own.service.nodeId}`);
      expect(relayBulletin.body).toMatchObject({ state: 'confirmed', value: 'yes' });
      expect(relayBulletin.body.accepted_via).not.toBeNull();
      // Its statements are stored, signed, and in the feed like anyone's.
      const events = await call(own.baseUrl, 'GET', `/events?authors=${own.service.nodeId}`);
      const votes = (events.body.events as { kind: string; data: { vote: { phase: string; sig: string } } }[]).filter((e) => e.kind === 'vote');
      expect(votes.map((e) => e.data.vote.phase)).toEqual(['accept', 'confirm']);
    } finally {
      await own.close();
      dir.remove();
    }
  });

  it('slice_hash votes resolve through a published slice', async () => {
    const id = await postClaim(relay, alice.auth, { kind: 'question', title: uniqueTitle(), body: '' });
    const published = await post('/slice', { v: [relay.service.nodeId] });
    const vote = signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item: id, voter: alice.nodeId, value: 'no', phase: 'vote', slice_hash: String(published.body.slice_hash), created_at: nowSeconds(clock) }, alice.secretKey);
    expect((await post(`/items/${id}/vote`, vote)).status).toBe(201);
    const unknownHash = signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item: id, voter: alice.nodeId, value: 'no', phase: 'accept', slice_hash: 'ab'.repeat(32), created_at: nowSeconds(clock) }, alice.secretKey);
    const r = await post(`/items/${id}/vote`, unknownHash);
    expect(r.status).toBe(422);
    expect((r.body.detail as unknown[])[0]).toMatchObject({ loc: ['body', 'slice_hash'] });
  });
});

describe('slices', () => {
  it('defaults t to 67 %, includes and excludes, and refuses what breaks the sanity rules', async () => {
    const node = await registerNode(relay, clock);
    const ids = Array.from({ length: 3 }, () => generateNodeKey().nodeId);
    const set = await post('/slice', { v: ids }, node.auth);
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ t_auto: true, slice: { t: 3 } });
    const inc = await post('/slice/include', { node_id: alice.nodeId }, node.auth);
    expect((inc.body.slice as { v: string[]; t: number }).v).toContain(alice.nodeId);
    expect((inc.body.slice as { t: number }).t).toBe(3);
    const exc = await post('/slice/exclude', { node_id: ids[0] }, node.auth);
    expect((exc.body.slice as { v: string[] }).v).not.toContain(ids[0]);
    for (const bad of [{ t: 5, v: ids }, { t: 0, v: ids }, { v: [ids[0], ids[0]] }, { v: [node.nodeId] }, { v: [] }, { v: ['xyz'] }]) {
      const r = await post('/slice', bad, node.auth);
      expect(r.status, JSON.stringify(bad)).toBe(422);
    }
    const deep = { t: 1, v: [], i: [{ t: 1, v: [], i: [{ t: 1, v: [], i: [{ t: 1, v: [], i: [{ t: 1, v: [ids[1]], i: [] }] }] }] }] };
    expect((await post('/slice', deep, node.auth)).status).toBe(422);
    // None of the refused changes touched the stored slice.
    const now = await call(relay.baseUrl, 'GET', `/nodes/${node.nodeId}`);
    expect((now.body.slice as { hash: string }).hash).toBe(exc.body.slice_hash);
  });

  it('a threshold that is no JSON integer is pydantic\'s int_type, as the core answers one inside a vote (JSON is read strictly: "1" is not coerced)', async () => {
    const node = await registerNode(relay, clock);
    const v = [generateNodeKey().nodeId];
    for (const t of ['1', 'x', null, 1.5, true]) {
      const r = await post('/slice', { t, v }, node.auth);
      expect([r.status, r.body.detail], JSON.stringify(t)).toEqual([422, [{ type: 'int_type', loc: ['body', 't'], msg: 'Input should be a valid integer', input: t }]]);
    }
    // Nested sets too: the inner set's `t` is named by its path.
    const inner = await post('/slice', { v, i: [{ t: '1', v: [generateNodeKey().nodeId] }] }, node.auth);
    expect(inner.body.detail).toEqual([{ type: 'int_type', loc: ['body', 'i', 0, 't'], msg: 'Input should be a valid integer', input: '1' }]);
  });

  it('refuses to exclude the last validator or an explicit t above the entries', async () => {
    const node = await registerNode(relay, clock);
    const [a, b] = [generateNodeKey().nodeId, generateNodeKey().nodeId];
    await post('/slice', { t: 2, v: [a, b] }, node.auth);
    expect((await post('/slice/exclude', { node_id: a }, node.auth)).status).toBe(422);
    await post('/slice', { v: [a] }, node.auth);
    expect((await post('/slice/exclude', { node_id: a }, node.auth)).status).toBe(422);
    expect((await post('/slice/exclude', { node_id: b }, node.auth)).status).toBe(422);
  });

  it('locates a refused include or exclude at the node_id sent, not at fields of a body the client never sent', async () => {
    const node = await registerNode(relay, clock);
    const a = generateNodeKey().nodeId;
    await post('/slice', { v: [a] }, node.auth);
    const detail = async (path: string, nodeId: string) => ((await post(path, { node_id: nodeId }, node.auth)).body as { detail: unknown[] }).detail;
    // Both were located at body.t and body.v.1.
    expect(await detail('/slice/exclude', a)).toEqual([{ type: 'value_error', loc: ['body', 'node_id'], msg: 'Value error, t must be between 1 and the number of entries (0)', input: a, ctx: { entries: 0 } }]);
    expect(await detail('/slice/include', node.nodeId)).toEqual([{ type: 'value_error', loc: ['body', 'node_id'], msg: 'Value error, a node does not list itself in its slice: self is implicit', input: node.nodeId }]);
    expect((await call(relay.baseUrl, 'GET', `/nodes/${node.nodeId}`)).body).toMatchObject({ slice: { quorum_set: { t: 1, v: [a] } } });
  });
});

