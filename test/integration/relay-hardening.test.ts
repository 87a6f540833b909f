import { createClock } from '@sinonjs/fake-timers';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import type { HostResolver } from '../../server/relay/domain/peer-target.js';
import { generateNodeKey, type NodeKey } from '../../core/relay/node-id.js';
import { quorumSetHash } from '../../core/relay/quorum-set.js';
import { createRelayService } from '../../server/relay/relay-service.js';
import { call, postClaim, registerNode, startRelayServer, tempDataDir, voteBy, type RunningRelay, type StartRelayServerOptions } from '../support/relay-test-kit.js';

/**
 * Relay hardening (issue 5 follow-ups): adding and probing peers makes the relay fetch URLs someone
 * chose, so only named operators may, and never towards loopback, link-local or private addresses
 * unless the relay allows private peers; configured peers always count. And a slice change is seen
 * by the very next tally, although parsed slices are cached.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A relay on loopback, closed and deleted after the test. */
async function relayWith(options: Omit<StartRelayServerOptions, 'clock' | 'dataDir'>, dataDir?: string): Promise<RunningRelay> {
  const data = dataDir === undefined ? tempDataDir() : undefined;
  const relay = await startRelayServer({ clock, dataDir: dataDir ?? data!.dir, logger: memoryLogger(), ...options });
  cleanups.push(async () => {
    await relay.close();
    data?.remove();
  });
  return relay;
}

/** DNS for tests: names map to the addresses given; the map may change between calls (rebinding). */
function fakeDns(answers: Map<string, string[]>): HostResolver {
  return (host) => {
    const found = answers.get(host);
    return found ? Promise.resolve(found) : Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' }));
  };
}

/** Outbound HTTP that never leaves the process: records each URL and fails like a host that is down. */
function recordingFetch(): { fetch: typeof fetch; urls: string[] } {
  const urls: string[] = [];
  const fake = (input: string | URL | Request) => {
    urls.push(String(input instanceof Request ? input.url : input));
    return Promise.reject(new TypeError('fetch failed (test: no network)'));
  };
  return { fetch: fake as typeof fetch, urls };
}

const reach = (relay: RunningRelay, url: string, auth: string) => call(relay.baseUrl, 'POST', '/reach', { body: { url }, auth });
const probe = (relay: RunningRelay, auth: string) => call<{ results: { url: string; reachable: boolean; error: string | null }[] }>(relay.baseUrl, 'POST', '/reach/probe', { body: {}, auth });
const peerUrls = async (relay: RunningRelay) => ((await call(relay.baseUrl, 'GET', '/relays')).body.relays as { url: string }[]).map((p) => p.url);

describe('who may add and probe peers', () => {
  it('by default nobody may, over HTTP: 403 saying how to name operators, and nothing is stored', async () => {
    const relay = await relayWith({});
    const human = await registerNode(relay, clock);
    const added = await reach(relay, 'https://peer.example', human.auth);
    expect(added.status).toBe(403);
    expect(String(added.body.detail)).toMatch(/names no operators.*operators option/);
    expect((await probe(relay, human.auth)).status).toBe(403);
    expect(await peerUrls(relay)).toEqual([]);
  });

  it('with operators, other humans get 403 and the operator may', async () => {
    const operatorKey = generateNodeKey();
    const relay = await relayWith({ operators: [operatorKey.nodeId], allowPrivatePeers: true });
    const operator = await registerNode(relay, clock, { key: operatorKey });
    const someone = await registerNode(relay, clock);
    const refused = await reach(relay, 'http://127.0.0.1:9', someone.auth);
    expect(refused.status).toBe(403);
    expect(String(refused.body.detail)).toBe("only this relay's operators may add, probe or pull from peers");
    expect((await probe(relay, someone.auth)).status).toBe(403);
    expect(await peerUrls(relay)).toEqual([]);
    expect((await reach(relay, 'http://127.0.0.1:9', operator.auth)).status).toBe(201);
    expect((await probe(relay, operator.auth)).status).toBe(200);
  });

  it('an operator that is not a node id is a start-up error, before the data dir is touched', async () => {
    const parent = tempDataDir();
    cleanups.push(() => parent.remove());
    const dataDir = join(parent.dir, 'relay');
    await expect(createRelayService({ clock, dataDir, baseUrl: 'http://x', humanUrl: 'http://x', logger: memoryLogger(), operators: ['alice'] })).rejects.toThrow(/operators must be node ids.*"alice"/);
    expect(existsSync(dataDir)).toBe(false);
  });
});

describe('where peers added over HTTP may point', () => {
  const operatorKey: NodeKey = generateNodeKey();
  const dns = new Map<string, string[]>([
    ['public.example', ['93.184.215.14']],
    ['mixed.example', ['93.184.215.14', '10.0.0.5']],
    ['metadata.example', ['169.254.169.254']],
  ]);
  const outbound = recordingFetch();
  const dataDir = tempDataDir();
  let relay: RunningRelay;
  let operatorAuth: string;

  beforeAll(async () => {
    relay = await startRelayServer({ clock, dataDir: dataDir.dir, logger: memoryLogger(), operators: [operatorKey.nodeId], resolveHost: fakeDns(dns), fetch: outbound.fetch });
    operatorAuth = (await registerNode(relay, clock, { key: operatorKey })).auth;
  });
  afterAll(async () => {
    await relay.close();
    dataDir.remove();
  });

  it.each([
    ['http://127.0.0.1:8081', '127.0.0.1 is a loopback address'],
    ['http://[::1]:8081', '::1 is a loopback address'],
    ['http://localhost:8081', 'localhost is a loopback name'],
    ['http://2130706433:8081', '127.0.0.1 is a loopback address'],
    ['http://169.254.169.254/latest', 'link-local'],
    ['http://10.1.2.3', 'private (RFC 1918)'],
    ['http://192.168.0.10:8081', 'private (RFC 1918)'],
    ['http://[fd00::1]', 'unique local'],
    ['http://[::ffff:127.0.0.1]', 'loopback'],
    ['http://metadata.example', 'metadata.example resolves to 169.254.169.254'],
    ['http://mixed.example', 'mixed.example resolves to 10.0.0.5'],
    ['http://nowhere.example', 'nowhere.example does not resolve'],
  ])('%s is refused with 403 (%s) and not stored', async (url, why) => {
    const answer = await reach(relay, url, operatorAuth);
    expect(answer.status).toBe(403);
    expect(String(answer.body.detail)).toContain(why);
    expect(String(answer.body.detail)).toMatch(/allowPrivatePeers/);
    expect(await peerUrls(relay)).toEqual([]);
    expect(outbound.urls).toEqual([]);
  });

  it('a public name is added; when it later resolves to a private address it is not fetched', async () => {
    expect((await reach(relay, 'https://public.example/api', operatorAuth)).status).toBe(201);
    const first = await probe(relay, operatorAuth);
    expect(first.body.results).toEqual([expect.objectContaining({ url: 'https://public.example/api', reachable: false, error: expect.stringContaining('fetch failed') })]);
    expect(outbound.urls).toEqual(['https://public.example/api/health']);
    // DNS rebinding: the same name now answers with loopback.
    dns.set('public.example', ['127.0.0.1']);
    const second = await probe(relay, operatorAuth);
    expect(second.body.results[0]).toMatchObject({ reachable: false, error: expect.stringContaining('not probed: public.example resolves to 127.0.0.1, a loopback address') });
    expect(outbound.urls).toHaveLength(1);
    const listed = await call<{ peers: { url: string; last_error: string }[] }>(relay.baseUrl, 'GET', '/reach');
    expect(listed.body.peers[0]!.last_error).toMatch(/^not probed/);
  });
});

describe('configured peers and allowPrivatePeers', () => {
  it('a configured loopback peer is probed without allowPrivatePeers; an operator cannot add another one', async () => {
    const upstream = await relayWith({});
    const operatorKey = generateNodeKey();
    const relay = await relayWith({ operators: [operatorKey.nodeId], peers: [upstream.baseUrl] });
    const operator = await registerNode(relay, clock, { key: operatorKey });
    const other = await relayWith({});
    expect((await reach(relay, other.baseUrl, operator.auth)).status).toBe(403);
    // Adding the configured one again is fine: it is the configuration's word.
    expect((await reach(relay, upstream.baseUrl, operator.auth)).status).toBe(200);
    const probed = await probe(relay, operator.auth);
    expect(probed.body.results).toEqual([expect.objectContaining({ url: upstream.baseUrl, reachable: true, error: null })]);
  });

  it('a private peer stored while allowed is not probed once the relay restarts without allowPrivatePeers', async () => {
    const upstream = await relayWith({});
    const operatorKey = generateNodeKey();
    const data = tempDataDir();
    cleanups.push(() => data.remove());
    const first = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), operators: [operatorKey.nodeId], allowPrivatePeers: true });
    const operator = await registerNode(first, clock, { key: operatorKey });
    expect((await reach(first, upstream.baseUrl, operator.auth)).status).toBe(201);
    expect((await probe(first, operator.auth)).body.results[0]).toMatchObject({ reachable: true });
    await first.close();

    const second = await relayWith({ operators: [operatorKey.nodeId] }, data.dir);
    const again = await probe(second, operator.auth);
    expect(again.body.results[0]).toMatchObject({ url: upstream.baseUrl, reachable: false, error: expect.stringContaining('loopback address') });
  });
});

describe('slice cache', () => {
  it('a changed slice is used by the next tally (published slice, as a bulletin of a node that has not voted)', async () => {
    const relay = await relayWith({});
    const [h1, h2, x] = await Promise.all([registerNode(relay, clock), registerNode(relay, clock), registerNode(relay, clock)]);
    const item = await postClaim(relay, h1.auth, { kind: 'statement', title: 'slice cache invalidation', body: '' });
    for (const phase of ['vote', 'accept'] as const) {
      expect((await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: voteBy(h1, item, 'yes', phase, { t: 1, v: [h2.nodeId], i: [] }, clock) })).status).toBe(201);
    }
    const bulletinOfX = async () => (await call(relay.baseUrl, 'GET', `/items/${item}/bulletin/${x.nodeId}`)).body;

    const hashOf = (nodes: string[]) => quorumSetHash({ t: 1, v: nodes, i: [] });
    expect((await call(relay.baseUrl, 'POST', '/slice', { body: { t: 1, v: [h2.nodeId] }, auth: x.auth })).status).toBe(200);
    expect(await bulletinOfX()).toMatchObject({ state: 'uncommitted', value: null, slice_hash: hashOf([h2.nodeId]) });

    expect((await call(relay.baseUrl, 'POST', '/slice', { body: { t: 1, v: [h1.nodeId] }, auth: x.auth })).status).toBe(200);
    expect(await bulletinOfX()).toMatchObject({ state: 'accepted', value: 'yes', accepted_via: 'v-blocking', slice_hash: hashOf([h1.nodeId]) });
    // Read twice: the second tally comes from the cache and must still agree.
    expect(await bulletinOfX()).toMatchObject({ state: 'accepted' });

    // The tally follows the new slice at once (slice_hash), but a rank never goes down: x stays accepted.
    expect((await call(relay.baseUrl, 'POST', '/slice', { body: { t: 1, v: [h2.nodeId] }, auth: x.auth })).status).toBe(200);
    expect(await bulletinOfX()).toMatchObject({ state: 'accepted', value: 'yes', slice_hash: hashOf([h2.nodeId]) });

    expect((await call(relay.baseUrl, 'POST', '/slice/include', { body: { node_id: h1.nodeId }, auth: x.auth })).status).toBe(200);
    expect((await call(relay.baseUrl, 'POST', '/slice/exclude', { body: { node_id: h2.nodeId }, auth: x.auth })).status).toBe(200);
    expect(await bulletinOfX()).toMatchObject({ state: 'accepted', value: 'yes', accepted_via: 'v-blocking', slice_hash: hashOf([h1.nodeId]) });

    // A refused change (empty slice) changes nothing, cached or not.
    expect((await call(relay.baseUrl, 'POST', '/slice/exclude', { body: { node_id: h1.nodeId }, auth: x.auth })).status).toBe(422);
    expect(await bulletinOfX()).toMatchObject({ state: 'accepted' });
  });
});
