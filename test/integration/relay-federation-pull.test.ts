import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { call, postClaim, registerNode, startRelayServer, tempDataDir, voteBy, type RunningRelay, type StartRelayServerOptions, type TestNode } from '../support/relay-test-kit.js';

/**
 * Issue 18: operators and tests can ask a relay to pull from its peers now (POST /federation/pull),
 * instead of waiting for the periodic probe, and it pulls until it has read each peer's feed to the
 * end, over as many probes as that takes. Two relays over real HTTP on loopback.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function relayWith(options: Omit<StartRelayServerOptions, 'clock' | 'dataDir'>): Promise<RunningRelay> {
  const data = tempDataDir('relay-pull-');
  const relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), ...options });
  cleanups.push(async () => {
    await relay.close();
    data.remove();
  });
  return relay;
}

/** 0 … count-1 in runs of `size`. */
function batchesOf(size: number, count: number): number[][] {
  const batches: number[][] = [];
  for (let start = 0; start < count; start += size) batches.push(Array.from({ length: Math.min(size, count - start) }, (_, k) => start + k));
  return batches;
}

type PullAnswer = { results: { url: string; reachable: boolean; pulled: number; rejected: number; caught_up: boolean; probes: number; error: string | null }[]; pulled: number; caught_up: boolean };
const pull = (relay: RunningRelay, auth: string, body: Record<string, unknown> = {}) => call<PullAnswer>(relay.baseUrl, 'POST', '/federation/pull', { body, auth });

describe('POST /federation/pull', () => {
  it('pulls a peer feed longer than one probe reads, to its end, and the two relays then agree', async () => {
    const upstream = await relayWith({});
    const operatorKey = generateNodeKey();
    // One page of PAGE_EVENTS per probe: the upstream feed below (over one page, at most two) needs
    // two probes. Small pages, not the 500 a relay serves at most: the same two probes from a feed
    // of a few dozen events, where 500 took 170 voters and 340 votes to seed (about 9 s).
    const PAGE_EVENTS = 20;
    const relay = await relayWith({ peers: [upstream.baseUrl], operators: [operatorKey.nodeId], peerPagesPerProbe: 1, peerPageEvents: PAGE_EVENTS });
    const operator = await registerNode(relay, clock, { key: operatorKey });
    // Set-up, not what is tested: 10 voters registered and their 20 votes sent eight at a time.
    const voters: TestNode[] = [];
    for (const batch of batchesOf(8, 10)) voters.push(...(await Promise.all(batch.map(() => registerNode(upstream, clock)))));
    const item = await postClaim(upstream, voters[0]!, { kind: 'statement', title: 'pulled now', body: '' });
    const sliceOf = (k: number) => ({ t: 1, v: [voters[(k + 1) % voters.length]!.nodeId], i: [] });
    for (const phase of ['vote', 'accept'] as const) {
      for (const batch of batchesOf(8, voters.length)) {
        const answers = await Promise.all(batch.map((k) => call(upstream.baseUrl, 'POST', `/items/${item}/vote`, { body: voteBy(voters[k]!, item, 'yes', phase, sliceOf(k), clock) })));
        expect(answers.map((answer) => answer.status)).toEqual(batch.map(() => 201));
      }
    }
    const feed = await call<{ events: unknown[]; has_more: boolean }>(upstream.baseUrl, 'GET', '/events?limit=500');
    // The set-up makes what the test needs: a feed longer than one page and no longer than two.
    expect(feed.body.has_more).toBe(false);
    expect(feed.body.events.length).toBeGreaterThan(PAGE_EVENTS);
    expect(feed.body.events.length).toBeLessThanOrEqual(2 * PAGE_EVENTS);
    expect((await call(relay.baseUrl, 'GET', `/items/${item}`)).status).toBe(404);

    const first = await pull(relay, operator.auth);
    expect(first.status).toBe(200);
    expect(first.body.results).toEqual([expect.objectContaining({ url: upstream.baseUrl, reachable: true, rejected: 0, caught_up: true, probes: 2, error: null })]);
    expect(first.body.pulled).toBeGreaterThan(PAGE_EVENTS);
    expect(first.body.caught_up).toBe(true);

    expect((await call(relay.baseUrl, 'GET', `/items/${item}`)).status).toBe(200);
    for (const node of [...voters.slice(0, 5).map((v) => v.nodeId), upstream.service.nodeId]) {
      const [there, here] = await Promise.all([upstream, relay].map((r) => call(r.baseUrl, 'GET', `/items/${item}/bulletin/${node}`)));
      expect(here!.body, node).toEqual(there!.body);
    }
    // Caught up: pulling again stores nothing, in one probe.
    const again = await pull(relay, operator.auth, { url: upstream.baseUrl });
    expect(again.body).toMatchObject({ pulled: 0, caught_up: true, results: [{ probes: 1, pulled: 0 }] });
  });

  it('is for operators only, and only for known peers', async () => {
    const upstream = await relayWith({});
    const operatorKey = generateNodeKey();
    const relay = await relayWith({ peers: [upstream.baseUrl], operators: [operatorKey.nodeId] });
    const operator = await registerNode(relay, clock, { key: operatorKey });
    const stranger = await registerNode(relay, clock);
    const refused = await pull(relay, stranger.auth);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ detail: "only this relay's operators may add, probe or pull from peers" });
    expect((await call(relay.baseUrl, 'POST', '/federation/pull', { body: {} })).status).toBe(401);
    const unknown = await pull(relay, operator.auth, { url: 'http://127.0.0.1:9/not-a-peer' });
    expect(unknown.status).toBe(404);

    const nobody = await relayWith({ peers: [upstream.baseUrl] });
    const someone = await registerNode(nobody, clock);
    expect((await pull(nobody, someone.auth)).status).toBe(403);
    // Nothing was pulled by the refused calls.
    expect(((await call(relay.baseUrl, 'GET', '/reach')).body.peers as { last_probe_at: string | null }[])[0]!.last_probe_at).toBeNull();
  });
});
