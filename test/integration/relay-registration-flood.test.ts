import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { type NodeKey, generateNodeKey } from '../../core/relay/node-id.js';
import type { QuorumSet } from '../../core/relay/quorum-set.js';
import { call, postClaim, registerNode, startRelayServer, tempDataDir, voteBy, type RunningRelay, type StartRelayServerOptions, type TestNode } from '../support/relay-test-kit.js';

/**
 * Issue 18, "Trust": without a configured slice every registration used to join the relay's own
 * slice, so whoever could register many keys decided what the relay accepted and confirmed. The
 * default slice is now the operators and the configured peers' relay nodes only (decision 0402).
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function relayWith(options: Omit<StartRelayServerOptions, 'clock' | 'dataDir'>): Promise<RunningRelay> {
  const data = tempDataDir('relay-flood-');
  const relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger(), ...options });
  cleanups.push(async () => {
    await relay.close();
    data.remove();
  });
  return relay;
}

type Answer = { status: number; body: { relay_emitted?: unknown[]; state?: string } };

/** 50 fresh nodes register, then each votes and accepts yes under a slice of the others (a quorum among themselves). */
async function flood(relay: RunningRelay, item: string): Promise<Answer[]> {
  const flooders: TestNode[] = [];
  for (let k = 0; k < 50; k++) flooders.push(await registerNode(relay, clock, { name: `flooder ${k}` }));
  const sliceOf = (k: number): QuorumSet => ({ t: 2, v: [1, 2, 3].map((d) => flooders[(k + d) % 50]!.nodeId), i: [] });
  const answers: Answer[] = [];
  for (const phase of ['vote', 'accept'] as const) {
    for (const [k, node] of flooders.entries()) {
      answers.push(await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: voteBy(node, item, 'yes', phase, sliceOf(k), clock) }));
    }
  }
  return answers;
}

/** Everything the relay node signed, from its own feed. */
async function relaySigned(relay: RunningRelay): Promise<unknown[]> {
  const events = (await call<{ events: { kind: string; author: string; data: unknown }[] }>(relay.baseUrl, 'GET', '/events?limit=500')).body.events;
  return events.filter((e) => e.kind === 'vote' && e.author === relay.service.nodeId);
}

describe('a flood of fresh registrations changes nothing the relay confirms', () => {
  it('without operators or peers the relay has no slice: 50 nodes voting and accepting yes move it nowhere', async () => {
    const relay = await relayWith({});
    const author = await registerNode(relay, clock);
    const item = await postClaim(relay, author.auth, { kind: 'statement', title: 'flood without a slice', body: '' });
    const answers = await flood(relay, item);
    expect(answers.every((a) => a.status === 201)).toBe(true);
    expect(answers.flatMap((a) => a.body.relay_emitted ?? [])).toEqual([]);
    expect((await call(relay.baseUrl, 'GET', `/items/${item}/bulletin/${relay.service.nodeId}`)).body).toMatchObject({ state: 'uncommitted', slice_hash: null, to_emit: [] });
    expect((await call(relay.baseUrl, 'GET', '/network')).body.relay).toMatchObject({ slice: null });
    expect(await relaySigned(relay)).toEqual([]);
  });

  it('with an operator the relay follows the operator alone: the flood does nothing, the operator\'s accept does', async () => {
    const operatorKey: NodeKey = generateNodeKey();
    const relay = await relayWith({ operators: [operatorKey.nodeId] });
    const operator = await registerNode(relay, clock, { key: operatorKey });
    const item = await postClaim(relay, operator.auth, { kind: 'statement', title: 'flood with an operator', body: '' });
    expect((await call(relay.baseUrl, 'GET', '/network')).body.relay).toMatchObject({ slice: { t: 1, v: [operatorKey.nodeId], i: [] } });

    const answers = await flood(relay, item);
    expect(answers.every((a) => a.status === 201)).toBe(true);
    expect(answers.flatMap((a) => a.body.relay_emitted ?? [])).toEqual([]);
    expect((await call(relay.baseUrl, 'GET', `/items/${item}/bulletin/${relay.service.nodeId}`)).body).toMatchObject({ state: 'uncommitted', to_emit: [] });
    expect(await relaySigned(relay)).toEqual([]);

    // Not vacuous: the one node the relay trusts moves it (v-blocking, then a quorum with the operator).
    const operatorSlice = { t: 1, v: [relay.service.nodeId], i: [] };
    const accepted = await call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body: voteBy(operator, item, 'no', 'accept', operatorSlice, clock) });
    expect(accepted.body.relay_emitted).toEqual([{ value: 'no', phase: 'accept' }, { value: 'no', phase: 'confirm' }]);
    expect((await call(relay.baseUrl, 'GET', `/items/${item}/bulletin/${relay.service.nodeId}`)).body).toMatchObject({ state: 'confirmed', value: 'no' });
  });
});
