import { createClock } from '@sinonjs/fake-timers';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { call, postClaim, registerNode, startRelayServer, tempDataDir, voteBy, type RunningRelay, type TestNode } from '../support/relay-test-kit.js';

/**
 * A configured peer's `/health` names its relay node, and that node joins the relay node's default
 * slice (decision 0402). A peer answering a `node_id` that is not a node id (or a small-order key)
 * put it into that slice, and every vote that made the relay emit its own statements was refused
 * (a 422 at `slice`, as if the client's vote were malformed) and not stored: the relay could not sign
 * a statement with such a slice. The relay now records only a node id it could take, and says why
 * it did not.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const data = tempDataDir();
const operatorKey = generateNodeKey();
let healthNodeId: unknown = 'not a node id';
let healthVersion: unknown = '0.9.19';
let peer: Server;
let peerUrl: string;
let relay: RunningRelay;
let operator: TestNode;
let alice: TestNode;

beforeAll(async () => {
  peer = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if ((req.url ?? '').startsWith('/health')) return res.end(JSON.stringify({ protocol: 'x-relay', version: healthVersion, node_id: healthNodeId }));
    return res.end(JSON.stringify({ events: [], next: 0, has_more: false }));
  });
  await new Promise<void>((resolve) => peer.listen(0, '127.0.0.1', resolve));
  peerUrl = `http://127.0.0.1:${(peer.address() as AddressInfo).port}`;
  relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), peers: [peerUrl], operators: [operatorKey.nodeId] });
  operator = await registerNode(relay, clock, { key: operatorKey });
  alice = await registerNode(relay, clock, { name: 'alice' });
});
afterAll(async () => {
  await relay.close();
  await new Promise<void>((resolve) => peer.close(() => resolve()));
  data.remove();
});

const pull = () => call<{ results: { node_id: string | null; version: string | null; error: string | null }[] }>(relay.baseUrl, 'POST', '/federation/pull', { body: { url: peerUrl }, auth: operator.auth });

describe("a configured peer's /health node_id", () => {
  it.each([
    ['not a node id', 'not a node id'],
    ['upper-case hex', 'A'.repeat(64)],
    ['a small-order key', '0'.repeat(64)],
  ])('%s is not recorded, and votes the relay answers with its own statements still succeed', async (_what, nodeId) => {
    healthNodeId = nodeId;
    const probed = await pull();
    expect(probed.status).toBe(200);
    expect(probed.body.results[0]).toMatchObject({ node_id: null, error: expect.stringContaining('node_id') });
    const item = await postClaim(relay, alice, { kind: 'statement', title: `voted on after ${nodeId}`, body: '' });
    // The operator alone is the relay's slice: its accept makes the relay node accept too.
    for (const phase of ['vote', 'accept'] as const) {
      const r = await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: voteBy(operator, item, 'yes', phase, { t: 1, v: [alice.nodeId], i: [] }, clock) });
      expect([phase, r.status]).toEqual([phase, 201]);
    }
    expect((await call<{ state: string }>(relay.baseUrl, 'GET', `/items/${item}/bulletin/${relay.service.nodeId}`)).body.state).toBe('accepted');
  });

  it('a node id it can take is recorded and joins the slice', async () => {
    const peerNode = generateNodeKey().nodeId;
    healthNodeId = peerNode;
    expect((await pull()).body.results[0]).toMatchObject({ node_id: peerNode, error: null });
    expect((await call<{ relay: { slice: { v: string[] } } }>(relay.baseUrl, 'GET', '/network')).body.relay.slice.v).toEqual([operator.nodeId, peerNode].sort());
  });
});

describe("a configured peer's /health version", () => {
  it.each([
    ['100 000 characters long', 'v'.repeat(100_000)],
    ['holding U+0000', '0.9.19\u0000'],
    ['holding a lone surrogate', '0.9.19\ud800'],
    ['a number', 919],
  ])('%s is not recorded (GET /network and /relays show it), and the probe says why', async (_what, version) => {
    healthNodeId = generateNodeKey().nodeId;
    healthVersion = version;
    const probed = await pull();
    expect(probed.status).toBe(200);
    expect(probed.body.results[0]).toMatchObject({ node_id: healthNodeId, version: null, error: expect.stringContaining('version') });
    for (const path of ['/network', '/relays']) expect(JSON.stringify((await call(relay.baseUrl, 'GET', path)).body)).not.toContain('vvvvvvvvvv');
  });

  it('a short version is recorded', async () => {
    healthVersion = '0.9.19';
    expect((await pull()).body.results[0]).toMatchObject({ version: '0.9.19', error: null });
  });
});
