import { createClock } from '@sinonjs/fake-timers';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import type { Vote } from '../../core/relay/vote.js';
import { claimId } from '../../core/relay/claim.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { call, postClaim, registerNode, startRelayServer, tempDataDir, voteBy, type RunningRelay, type TestNode } from '../support/relay-test-kit.js';

/**
 * A vote's hint is unsigned and "relays may change it" (scp-s5). A peer that serves a genuine vote
 * with a hint this relay would not take from a client (longer than 4096 bytes of JSON, or nested
 * deeper than 32; decision 0435; a relay of an older version may hold one) has not lied: the vote is
 * stored without that hint and the peer keeps its standing. Only the hint is dropped, never the vote.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 25, 12)));
const operatorKey = generateNodeKey();
const dirs = [tempDataDir('relay-hint-source-'), tempDataDir('relay-hint-puller-')];
let source: RunningRelay;
let puller: RunningRelay;
let operator: TestNode;
let alice: TestNode;
let peer: Server;
let peerUrl: string;
/** The source's genuine feed with every vote's hint replaced by `servedHint`. */
let servedHint: unknown;

beforeAll(async () => {
  const started = await Promise.all(dirs.map((d) => startRelayServer({ clock, dataDir: d.dir, logger: memoryLogger(), operators: [operatorKey.nodeId], allowPrivatePeers: true })));
  [source, puller] = [started[0]!, started[1]!];
  operator = await registerNode(puller, clock, { key: operatorKey });
  alice = await registerNode(source, clock, { name: 'alice' });
  peer = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://peer');
    res.setHeader('content-type', 'application/json');
    if (url.pathname === '/health') return res.end(JSON.stringify({ protocol: 'x-relay', version: '0.9.19', node_id: generateNodeKey().nodeId, base_url: peerUrl }));
    if (url.pathname !== '/events') {
      res.statusCode = 404;
      return res.end(JSON.stringify({ detail: 'not found' }));
    }
    void call<{ events: { kind: string; data: { vote?: Vote } }[]; next: number; has_more: boolean }>(source.baseUrl, 'GET', `/events?${url.searchParams.toString()}`).then((page) => {
      const events = page.body.events.map((e) => (e.kind === 'vote' ? { ...e, data: { ...e.data, vote: { ...e.data.vote, hint: servedHint } } } : e));
      res.end(JSON.stringify({ ...page.body, events }));
    });
  });
  await new Promise<void>((resolve) => peer.listen(0, '127.0.0.1', resolve));
  peerUrl = `http://127.0.0.1:${(peer.address() as AddressInfo).port}`;
  expect((await call(puller.baseUrl, 'POST', '/reach', { body: { url: peerUrl }, auth: operator.auth })).status).toBe(201);
});
afterAll(async () => {
  await Promise.all([source.close(), puller.close()]);
  await new Promise<void>((resolve) => peer.close(() => resolve()));
  for (const d of dirs) d.remove();
});

describe('a peer serving a genuine vote with a hint this relay would not take from a client', () => {
  it('is pulled without that hint, counted, and the peer keeps its standing', async () => {
    const claim = { kind: 'statement', title: 'hinted elsewhere', body: '' };
    await postClaim(source, alice, claim);
    expect((await call(source.baseUrl, 'POST', `/items/${claimId(claim)}/vote`, { body: voteBy(alice, claimId(claim), 'yes', 'vote', { t: 1, v: [source.service.nodeId], i: [] }, clock) })).status).toBe(201);
    servedHint = { note: 'x'.repeat(10_000) };

    const pulled = await call<{ results: { error: string | null; pulled: number; rejected: number }[] }>(puller.baseUrl, 'POST', '/federation/pull', { body: { url: peerUrl }, auth: operator.auth });
    expect(pulled.body.results).toMatchObject([{ error: null, rejected: 0 }]);
    const votes = (await call<{ events: { kind: string; data: { vote: Vote } }[] }>(puller.baseUrl, 'GET', `/events?authors=${alice.nodeId}`)).body.events.filter((e) => e.kind === 'vote');
    expect(votes.map((e) => [e.data.vote.item, e.data.vote.value, 'hint' in e.data.vote])).toEqual([[claimId(claim), 'yes', false]]);
    const record = (await call<{ peers: { url: string; offences: number }[] }>(puller.baseUrl, 'GET', '/reach')).body.peers.find((p) => p.url === peerUrl);
    expect(record?.offences).toBe(0);
  });
});
