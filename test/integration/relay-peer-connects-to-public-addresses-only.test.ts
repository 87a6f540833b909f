import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createClock } from '@sinonjs/fake-timers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import type { HostResolver } from '../../server/relay/domain/peer-target.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { call, registerNode, startRelayServer, tempDataDir, type RunningRelay } from '../support/relay-test-kit.js';

/**
 * Issue 9: the peer address rule is decided on the address the relay connects to. A name that
 * answers a public address to the check and loopback to the connection (DNS rebinding with TTL 0)
 * used to get the probe through; now the socket's own lookup refuses it and nothing connects.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const data = tempDataDir();
let relay: RunningRelay;
let operatorAuth: string;
let victim: ReturnType<typeof createServer>;
let victimPort: number;
let victimConnections = 0;
/** Answers public to the first `publicAnswers` lookups, loopback after: the attacker's DNS. */
let publicAnswers = 0;
const rebindingDns: HostResolver = (host) => {
  if (host !== 'peer.example') return Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' }));
  return Promise.resolve(publicAnswers-- > 0 ? ['93.184.215.14'] : ['127.0.0.1']);
};

beforeAll(async () => {
  // What the attacker wants reached: something that only listens on the relay host's loopback.
  victim = createServer((_req, res) => res.end(JSON.stringify({ protocol: 'x-relay', node_id: null, version: 'secret' })));
  victim.on('connection', () => victimConnections++);
  await new Promise<void>((resolve) => victim.listen(0, '127.0.0.1', resolve));
  victimPort = (victim.address() as AddressInfo).port;
  const operatorKey = generateNodeKey();
  // No `fetch` injected: the relay's own outbound HTTP, as in production.
  relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), operators: [operatorKey.nodeId], resolveHost: rebindingDns });
  operatorAuth = (await registerNode(relay, clock, { key: operatorKey })).auth;
});
afterAll(async () => {
  await relay.close();
  data.remove();
  victim.closeAllConnections();
  await new Promise<void>((resolve) => victim.close(() => resolve()));
});

describe('a peer name that rebinds to loopback between the check and the connection', () => {
  it('passes both checks but is never connected to; the refusal is what GET /reach shows', async () => {
    const url = `http://peer.example:${victimPort}`;
    publicAnswers = 2; // POST /reach checks once, the probe checks again; the connection asks a third time.
    expect((await call(relay.baseUrl, 'POST', '/reach', { body: { url }, auth: operatorAuth })).status).toBe(201);
    const probed = await call<{ results: { url: string; reachable: boolean; error: string | null }[] }>(relay.baseUrl, 'POST', '/reach/probe', { body: {}, auth: operatorAuth });
    expect(probed.body.results).toEqual([
      expect.objectContaining({ url, reachable: false, error: 'not connecting to peer.example: it resolves to 127.0.0.1, a loopback address' }),
    ]);
    expect(publicAnswers).toBe(-1);
    expect(victimConnections).toBe(0);
  });
});
