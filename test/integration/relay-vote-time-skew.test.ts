import { createClock } from '@sinonjs/fake-timers';
import { http, HttpResponse } from 'msw';
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { claimId } from '../../core/relay/claim.js';
import { generateNodeKey, type NodeKey } from '../../core/relay/node-id.js';
import { signItemAuthorship } from '../../core/relay/item-authorship.js';
import { signVote, type Vote } from '../../core/relay/vote.js';
import { relayLimits } from '../../wire/relay/relay-facts.js';
import { createRelayService } from '../../server/relay/relay-service.js';
import { signDocument } from '../../server/relay/domain/signed-document.js';
import { call, nowSeconds, postClaim, registerNode, startRelayServer, tempDataDir } from '../support/relay-test-kit.js';

/**
 * POST /items/{id}/vote and federation apply one vote-time rule (`voteTimeProblem`): a statement
 * dated more than proofMaxSkewSeconds in the future is refused by both (federation once stored them).
 */
const fake = createClock(Date.UTC(2026, 10, 20, 12));
const clock = clockFromFakeTimers(fake);
const skew = relayLimits.proofMaxSkewSeconds;
const peerNode = generateNodeKey();

function voteAt(key: NodeKey, item: string, value: 'yes' | 'no', createdAt: number): Vote {
  return signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: key.nodeId, value, phase: 'vote', slice: { t: 1, v: [peerNode.nodeId], i: [] }, created_at: createdAt }, key.secretKey);
}

describe('POST /items/{id}/vote', () => {
  it(`accepts created_at up to ${skew} s ahead and refuses one second more with 422 at created_at`, async () => {
    const data = tempDataDir();
    const relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger() });
    try {
      const alice = await registerNode(relay, clock);
      const bob = await registerNode(relay, clock);
      const item = await postClaim(relay, alice.auth, { kind: 'statement', title: 'vote clock', body: '' });
      const late = await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: voteAt(alice, item, 'yes', nowSeconds(clock) + skew + 1) });
      expect(late.status).toBe(422);
      expect((late.body.detail as { loc: unknown; msg: string }[])[0]).toMatchObject({ loc: ['body', 'created_at'], msg: expect.stringMatching(/in the future: 301 s ahead/) });
      expect((await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: voteAt(bob, item, 'yes', nowSeconds(clock) + skew) })).status).toBe(201);
    } finally {
      await relay.close();
      data.remove();
    }
  });
});

describe('federation', () => {
  const peer = 'http://peer.test';
  const server = setupServer();
  beforeAll(() => server.listen({ onUnhandledRequest: 'error' }));
  afterEach(() => server.resetHandlers());
  afterAll(() => server.close());

  it('refuses a pulled statement dated beyond the skew, with the same reason, and stores one within it', async () => {
    const [a, b] = [generateNodeKey(), generateNodeKey()];
    const claim = { kind: 'statement', title: 'federated vote clock', body: '' };
    const item = claimId(claim);
    const now = nowSeconds(clock);
    const registration = (key: NodeKey) => signDocument({ schema: 'x.register/1', node_id: key.nodeId, relay: peer, created_at: now, name: 'remote' }, key.secretKey);
    const feed = [
      { seq: 1, kind: 'node', author: a.nodeId, subject: a.nodeId, data: { registration: registration(a) } },
      { seq: 2, kind: 'node', author: b.nodeId, subject: b.nodeId, data: { registration: registration(b) } },
      { seq: 3, kind: 'item', author: a.nodeId, subject: item, data: { item: { id: item, type: 'claim', ...claim, author: a.nodeId, authorship: signItemAuthorship({ schema: 'x.item/1', item, type: 'claim', author: a.nodeId }, a.secretKey) } } },
      { seq: 4, kind: 'vote', author: a.nodeId, subject: item, data: { vote: voteAt(a, item, 'yes', now + skew + 1) } },
      { seq: 5, kind: 'vote', author: b.nodeId, subject: item, data: { vote: voteAt(b, item, 'yes', now + skew) } },
    ];
    server.use(
      http.get(`${peer}/health`, () => HttpResponse.json({ protocol: 'x-relay', version: '0.9.19', node_id: peerNode.nodeId })),
      http.get(`${peer}/events`, () => HttpResponse.json({ events: feed, next: 5, has_more: false })),
    );
    const data = tempDataDir();
    const relay = await createRelayService({ clock, dataDir: data.dir, baseUrl: 'http://me.test', humanUrl: 'http://me.test', fetch: (...args) => fetch(...args), peers: [peer], logger: memoryLogger() });
    try {
      const [result] = await relay.federation.probeAll();
      expect(result).toMatchObject({ pulled: 4, rejected: 1, cursor: 5 });
      expect((await relay.federation.peer(peer))!.last_error).toMatch(/event 4 \(vote\): created_at is in the future: 301 s ahead/);
    } finally {
      await relay.close();
      data.remove();
    }
  });
});
