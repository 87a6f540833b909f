import { createClock } from '@sinonjs/fake-timers';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { memoryLogger } from '../../server/http/logger.js';
import { type NodeKey, generateNodeKey } from '../../core/relay/node-id.js';
import { type Vote, signVote } from '../../core/relay/vote.js';
import { call, postClaim, registerNode, startRelayServer, tempDataDir, type RunningRelay, type TestNode } from '../support/relay-test-kit.js';

/**
 * Issue 18, "Convergence": relays that hold the same statements answer the same bulletins, whatever
 * order the statements reached them in. One random statement set (random slices, several slices per
 * voter, equal and different signed times, both values) is posted in pieces to three relays in
 * shuffled orders; the relays then pull from each other (POST /federation/pull, real HTTP) in a
 * random order, and every node's bulletin must be the same on every relay.
 */
const fakeTime = createClock(Date.UTC(2026, 10, 20, 12));
const clock = clockFromFakeTimers(fakeTime);
const relayCount = 3;
const voterCount = 4;
const dirs = Array.from({ length: relayCount }, () => tempDataDir('relay-converge-'));
const operatorKeys = Array.from({ length: relayCount }, () => generateNodeKey());
const voterKeys: NodeKey[] = Array.from({ length: voterCount }, () => generateNodeKey());
let relays: RunningRelay[];
let operators: TestNode[];
let run = 0;

beforeAll(async () => {
  // Each relay's slice is its operator, who never votes: the relays sign nothing themselves, so the
  // statement set is exactly the generated one.
  relays = await Promise.all(dirs.map((d, k) => startRelayServer({ clock, dataDir: d.dir, logger: memoryLogger(), operators: [operatorKeys[k]!.nodeId], allowPrivatePeers: true })));
  operators = await Promise.all(relays.map((r, k) => registerNode(r, clock, { key: operatorKeys[k]! })));
  for (const r of relays) for (const key of voterKeys) await registerNode(r, clock, { key });
  for (const [k, r] of relays.entries()) {
    for (const other of relays) if (other !== r) expect((await call(r.baseUrl, 'POST', '/reach', { body: { url: other.baseUrl }, auth: operators[k]!.auth })).status).toBe(201);
  }
});
afterAll(async () => {
  await Promise.all(relays.map((r) => r.close()));
  dirs.forEach((d) => d.remove());
});

/** A statement before signing: who, what, under which slice (offsets from the voter), when. */
const statementArb = fc.record({
  who: fc.nat({ max: voterCount - 1 }),
  value: fc.constantFrom('yes' as const, 'no' as const),
  phase: fc.constantFrom('vote' as const, 'accept' as const, 'confirm' as const),
  offsets: fc.subarray([1, 2, 3], { minLength: 1 }),
  t: fc.nat(),
  agoSeconds: fc.constantFrom(0, 0, 5, 60),
});
const scenarioArb = fc.record({
  statements: fc.uniqueArray(statementArb, { selector: (s) => `${s.who} ${s.value} ${s.phase}`, minLength: 1, maxLength: 10 }),
  // Which relays each statement is posted to (at least one), and a shuffle key per relay.
  targets: fc.array(fc.subarray([0, 1, 2], { minLength: 1 }), { minLength: 10, maxLength: 10 }),
  postOrder: fc.array(fc.nat(), { minLength: 10, maxLength: 10 }),
  pullOrder: fc.shuffledSubarray([0, 1, 2], { minLength: 3, maxLength: 3 }),
});

type Unsigned = { who: number; value: 'yes' | 'no'; phase: Vote['phase']; offsets: number[]; t: number; agoSeconds: number };

function sign(item: string, s: Unsigned): Vote {
  const voter = voterKeys[s.who]!;
  const slice = { t: 1 + (s.t % s.offsets.length), v: s.offsets.map((o) => voterKeys[(s.who + o) % voterCount]!.nodeId), i: [] };
  const createdAt = Math.floor(clock.nowMs() / 1000) - s.agoSeconds;
  return signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: voter.nodeId, value: s.value, phase: s.phase, slice, created_at: createdAt }, voter.secretKey);
}

describe('relays with the same statements answer the same bulletins, whatever the order (property, real federation)', () => {
  it('posted in pieces and shuffled orders, then pulled in a random order', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async ({ statements, targets, postOrder, pullOrder }) => {
        run += 1;
        const claim = { kind: 'statement', title: `convergence run ${run}`, body: '' };
        const item = await postClaim(relays[0]!, operators[0]!, claim);
        for (const [k, r] of relays.entries()) if (k > 0) await postClaim(r, operators[k]!, claim);
        const signed = statements.map((s) => sign(item, s));
        // Each relay gets its share in its own order.
        for (const [k, r] of relays.entries()) {
          const share = signed.map((v, j) => ({ v, j })).filter(({ j }) => targets[j]!.includes(k));
          share.sort((a, b) => ((postOrder[a.j]! * (k + 1)) % 7) - ((postOrder[b.j]! * (k + 1)) % 7) || a.j - b.j);
          if (k === 1) share.reverse();
          for (const { v } of share) {
            expect((await call(r.baseUrl, 'POST', `/items/${item}/vote`, { body: v })).status).toBeLessThan(300);
            // Local storage times differ, as on real relays: a rule that read them would now diverge.
            fakeTime.tick(1);
          }
        }
        for (const k of pullOrder) {
          const pulled = await call<{ caught_up: boolean }>(relays[k]!.baseUrl, 'POST', '/federation/pull', { body: {}, auth: operators[k]!.auth });
          expect(pulled.status).toBe(200);
          expect(pulled.body.caught_up).toBe(true);
          fakeTime.tick(1);
        }
        // A second round: the first pullers now get what the later ones pulled.
        for (const k of pullOrder) await call(relays[k]!.baseUrl, 'POST', '/federation/pull', { body: {}, auth: operators[k]!.auth });
        for (const node of [...voterKeys.map((v) => v.nodeId), operatorKeys[0]!.nodeId]) {
          const answers = await Promise.all(relays.map((r) => call(r.baseUrl, 'GET', `/items/${item}/bulletin/${node}`)));
          for (const a of answers.slice(1)) expect(a.body, `bulletin of ${node}`).toEqual(answers[0]!.body);
        }
        const counts = await Promise.all(relays.map(async (r) => ((await call<{ counts: unknown }>(r.baseUrl, 'GET', `/items/${item}`)).body.counts)));
        expect(counts[1]).toEqual(counts[0]);
        expect(counts[2]).toEqual(counts[0]);
        fakeTime.tick(1000);
      }),
      { numRuns: 25 },
    );
  }, 120_000);
});
