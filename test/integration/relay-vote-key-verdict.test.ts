import { createClock } from '@sinonjs/fake-timers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { forgetKeyCaches } from '../../core/relay/ed25519.js';
import { memoryLogger } from '../../server/http/logger.js';
import { generateNodeKey } from '../../core/relay/node-id.js';
import { call, postClaim, registerNode, startRelayServer, tempDataDir, voteBy, type RunningRelay, type TestNode } from '../support/relay-test-kit.js';

/**
 * A registered voter's key passed the key check when it registered, and the relay takes its nodes
 * table for that verdict (issue 30): a first vote after a restart, with the process's key caches
 * empty, costs no key check in JavaScript. Only registered voters are spared it: a forged vote
 * under a small-order key, which only the key check refuses, is still a 422 at `sig`, as before,
 * and a stranger's well-signed vote is still a 403.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 29, 12)));
const data = tempDataDir('relay-vote-key-verdict-');
let relay: RunningRelay;
let alice: TestNode;
let item: string;

async function restart(): Promise<void> {
  await relay.close();
  forgetKeyCaches();
  relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger() });
}

beforeAll(async () => {
  relay = await startRelayServer({ clock, dataDir: data.dir, logger: memoryLogger() });
  alice = await registerNode(relay, clock);
  item = await postClaim(relay, alice, { kind: 'statement', title: 'verdicts kept', body: '' });
});
afterAll(async () => {
  await relay.close();
  data.remove();
});

const post = (body: unknown) => call(relay.baseUrl, 'POST', `/items/${item}/vote`, { body });

describe("POST /items/{id}/vote after a restart, the process's key caches empty", () => {
  it("takes a registered voter's vote", async () => {
    await restart();
    const answer = await post(voteBy(alice, item, 'yes', 'vote', { t: 1, v: [relay.service.nodeId], i: [] }, clock));
    expect(answer.status, answer.text).toBe(201);
  });

  it("refuses a forgery under a small-order key at its signature, as the key check always did", async () => {
    await restart();
    // The identity point as a node id; R = identity, S = 0 satisfies OpenSSL's equation for any message.
    const identity = `01${'00'.repeat(31)}`;
    const forged = { schema: 'x.vote/1', scheme: 'scp-s5', item, voter: identity, value: 'yes', phase: 'vote', slice: { t: 1, v: [alice.nodeId], i: [] }, created_at: 1, sig: Buffer.concat([Buffer.from(identity, 'hex'), Buffer.alloc(32)]).toString('base64url') };
    const answer = await post(forged);
    expect(answer.status, answer.text).toBe(422);
    expect((answer.body as { detail: { loc: unknown[] }[] }).detail[0]!.loc).toEqual(['body', 'sig']);
  });

  it("answers a stranger's well-signed vote 403", async () => {
    await restart();
    const answer = await post(voteBy(generateNodeKey(), item, 'yes', 'vote', { t: 1, v: [alice.nodeId], i: [] }, clock));
    expect(answer.status, answer.text).toBe(403);
  });
});
