import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClock } from '@sinonjs/fake-timers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { type RunningRelay, startRelayServer } from '../../server/relay/relay-service.js';
import { RelayClient, type RelayNode } from '../../clients/relay/relay-client.js';

const fake = createClock(Date.UTC(2026, 0, 1));
const clock = clockFromFakeTimers(fake);
const dataDir = mkdtempSync(path.join(tmpdir(), 'relay-client-'));
let relay: RunningRelay;
let client: RelayClient;

beforeAll(async () => {
  relay = await startRelayServer({ clock, dataDir });
  client = new RelayClient({ baseUrl: `${relay.baseUrl}/`, clock });
});
afterAll(async () => {
  await relay.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('RelayClient', () => {
  it('registers a node with a signed document naming the relay, and uses its credential', async () => {
    const key = generateNodeKey();
    const { node, answer } = await client.raw.register({ key, name: 'kim' });
    expect(answer.status).toBe(201);
    expect(node).toMatchObject({ nodeId: key.nodeId, authorization: expect.stringMatching(/^Bearer [0-9a-f]{64}\.[0-9a-f]{64}$/) });
    const me = await client.raw.request('GET', '/me', { auth: node?.authorization as string });
    expect(me.json).toMatchObject({ caller: 'human', node: { node_id: key.nodeId } });
  });

  it('a document signed too far from the relay clock is refused (the client signs with the clock it was given)', async () => {
    const late = new RelayClient({ baseUrl: relay.baseUrl, clock: { ...clock, nowMs: () => clock.nowMs() + 301_000 } });
    const { node, answer } = await late.raw.register();
    expect(node).toBeUndefined();
    expect(answer.status).toBe(422);
  });

  it('votes with the default 67 % threshold and a sorted slice; the relay verifies the signature', async () => {
    const nodes: RelayNode[] = [];
    for (let n = 0; n < 4; n++) {
      const { node } = await client.raw.register();
      if (!node) throw new Error('registration failed');
      nodes.push(node);
    }
    const [a, b, c, d] = nodes as [RelayNode, RelayNode, RelayNode, RelayNode];
    const item = (await client.raw.postClaim(a, { kind: 'statement', title: 'client test', body: '' })).json as { id: string };
    const vote = await client.raw.vote(a, { item: item.id, value: 'yes', phase: 'vote', slice: { v: [d.nodeId, c.nodeId, b.nodeId] } });
    expect(vote.status, vote.text).toBe(201);
    const bulletin = await client.raw.bulletin(item.id, a.nodeId);
    expect(bulletin.json).toMatchObject({ state: 'voted', value: 'yes' });
    // 3 validators: t = 1 + floor((3 * 67 - 1) / 100) = 3.
    const events = (await client.raw.request('GET', '/events?limit=500')).json as { events: Array<{ kind: string; author: string; data: { vote?: { slice?: unknown } } }> };
    const stored = events.events.find((e) => e.kind === 'vote' && e.author === a.nodeId);
    expect(stored?.data.vote?.slice).toEqual({ t: 3, v: [b.nodeId, c.nodeId, d.nodeId].sort(), i: [] });
  });

  it('refuses to sign for a node whose key it does not hold', async () => {
    const a = generateNodeKey();
    const b = generateNodeKey();
    await expect(client.raw.vote({ nodeId: a.nodeId, secretKey: b.secretKey }, { item: '0'.repeat(64), value: 'yes', phase: 'vote', slice: { v: [b.nodeId] } })).rejects.toThrow(/secret key belongs to node/);
  });
});
