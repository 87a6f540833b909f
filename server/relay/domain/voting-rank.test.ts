import { createClock } from '@sinonjs/fake-timers';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { type NodeKey, generateNodeKey } from '../../../core/relay/node-id.js';
import type { QuorumSet } from '../../../core/relay/quorum-set.js';
import { type Vote, signVote } from '../../../core/relay/vote.js';
import { bulletinRank } from '../../../core/relay/tally.js';
import { RelayStore } from '../relay-store.js';
import { tempDataDir } from '../../../test/support/relay-test-kit.js';
import { Voting } from './voting.js';

/**
 * Audit finding 1: a node's bulletin rank went down when a voter posted a later statement with
 * another slice. A voter with several slices for an item now counts as satisfied by any of them
 * (decision 0403; listed in `sliceChangers`), and the reported bulletin is floored on write paths.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const item = 'ab'.repeat(32);
const keys = Array.from({ length: 4 }, () => generateNodeKey());
const [x, y, w] = keys as [NodeKey, NodeKey, NodeKey];
let data: ReturnType<typeof tempDataDir>;
let store: RelayStore;
let voting: Voting;
let nowMs = 0;

function statement(key: NodeKey, value: 'yes' | 'no', phase: Vote['phase'], slice: QuorumSet): Vote {
  return signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: key.nodeId, value, phase, slice, created_at: 1_700_000_000 }, key.secretKey);
}
const store1 = (v: Vote) => store.tx(voting.storeVote(v, null, ++nowMs));
const slice = (t: number, nodes: NodeKey[]): QuorumSet => ({ t, v: nodes.map((k) => k.nodeId), i: [] });

beforeEach(async () => {
  data = tempDataDir('voting-rank-');
  store = new RelayStore(data.dir);
  voting = new Voting({ store, clock, selfKey: generateNodeKey() });
  store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 't', ?, 0)").run(item, x.nodeId);
});
afterEach(() => {
  store.close();
  data.remove();
});

describe('a voter that re-declares its slice for an item cannot withdraw from a quorum', () => {
  it('the audit repro: Y re-declaring its slice in a later accept does not pull X out of the quorum {X, Y}', async () => {
    store1(statement(x, 'yes', 'vote', slice(1, [y, w])));
    store1(statement(y, 'yes', 'vote', slice(1, [x])));
    expect(await store.plain(voting.bulletin(item, x.nodeId))).toMatchObject({ state: 'accepted', value: 'yes', accepted_via: 'quorum', sliceChangers: [] });
    store1(statement(y, 'yes', 'accept', slice(1, [w])));
    expect(await store.plain(voting.bulletin(item, x.nodeId))).toMatchObject({ state: 'confirmed', value: 'yes', sliceChangers: [y.nodeId] });
  });

  it('holds without any floor: the tally itself counts the voter under any of its slices (floors wiped before reading)', async () => {
    store1(statement(x, 'yes', 'vote', slice(1, [y, w])));
    store1(statement(y, 'yes', 'vote', slice(1, [x])));
    store1(statement(y, 'yes', 'accept', slice(1, [w])));
    store.db.prepare('DELETE FROM bulletin_floors').run();
    // With the newest slice ({W}, and W has none) X would only have voted.
    expect(await store.plain(voting.bulletin(item, x.nodeId))).toMatchObject({ state: 'confirmed', accepted_via: 'quorum' });
  });

  it('the same slice sent inline and by hash is no change', async () => {
    store1(statement(y, 'yes', 'vote', slice(1, [x])));
    const hash = await store.tx(voting.rememberQuorumSet(slice(1, [x])));
    const { slice: _inline, sig: _sig, ...rest } = statement(y, 'yes', 'accept', slice(1, [x]));
    store1(signVote({ ...rest, slice_hash: hash }, y.secretKey));
    expect((await store.plain(voting.bulletin(item, x.nodeId))).sliceChangers).toEqual([]);
  });
});

describe('a voter with several slices for an item', () => {
  it('is conflicted when under two of its slices it accepts different values (docs/scp-s5.md, case 6), floors aside', async () => {
    const z = keys[3] as NodeKey;
    // Two signed documents of one statement (vote yes), each declaring another slice.
    store1(statement(z, 'yes', 'vote', slice(1, [y])));
    const { sig: _sig, ...unsigned } = statement(z, 'yes', 'vote', slice(1, [w]));
    store1(signVote({ ...unsigned, created_at: 1_700_000_001 }, z.secretKey));
    store1(statement(y, 'yes', 'accept', slice(1, [x])));
    expect(await store.plain(voting.bulletin(item, z.nodeId))).toMatchObject({ state: 'accepted', value: 'yes', sliceChangers: [z.nodeId] });
    store1(statement(w, 'no', 'accept', slice(1, [x])));
    // Under {y} z accepts yes, under {w} it accepts no: it would hold both sides.
    store.db.prepare('DELETE FROM bulletin_floors').run();
    expect(await store.plain(voting.bulletin(item, z.nodeId))).toMatchObject({ state: 'conflicted', value: null, accepted_via: null, toEmit: [] });
  });
});

describe('the floor', () => {
  it('a floor at accepted yes and a tally now accepting no is conflicted (the node would hold both sides), and stays so', async () => {
    const z = keys[3] as NodeKey;
    await store.tx(voting.setSlice(z.nodeId, slice(1, [y]), false, ++nowMs));
    store1(statement(y, 'yes', 'accept', slice(1, [x])));
    expect(await store.plain(voting.bulletin(item, z.nodeId))).toMatchObject({ state: 'accepted', value: 'yes', toEmit: [{ value: 'yes', phase: 'accept' }] });
    await store.tx(voting.setSlice(z.nodeId, slice(1, [w]), false, ++nowMs));
    // Floored: still accepted yes, and z is asked for the accept it owes.
    expect(await store.plain(voting.bulletin(item, z.nodeId))).toMatchObject({ state: 'accepted', value: 'yes', accepted_via: 'v-blocking', toEmit: [{ value: 'yes', phase: 'accept' }] });
    store1(statement(w, 'no', 'accept', slice(1, [x])));
    expect(await store.plain(voting.bulletin(item, z.nodeId))).toMatchObject({ state: 'conflicted', value: null, toEmit: [] });
    await store.tx(voting.setSlice(z.nodeId, slice(1, [y]), false, ++nowMs));
    expect((await store.plain(voting.bulletin(item, z.nodeId))).state).toBe('conflicted');
  });

  it('survives a new Voting on the same store (it is persisted, not cached)', async () => {
    await store.tx(voting.setSlice(w.nodeId, slice(1, [y]), false, ++nowMs));
    store1(statement(y, 'yes', 'accept', slice(1, [x])));
    expect((await store.plain(voting.bulletin(item, w.nodeId))).state).toBe('accepted');
    await store.tx(voting.setSlice(w.nodeId, slice(1, [x]), false, ++nowMs));
    const fresh = new Voting({ store, clock, selfKey: generateNodeKey() });
    expect(await store.plain(fresh.bulletin(item, w.nodeId))).toMatchObject({ state: 'accepted', value: 'yes' });
  });
});

describe('a bulletin rank never goes down (property, store-backed Voting)', () => {
  /** A slice as offsets from its owner (1..3), so it never names the owner itself; t from 1 to its size. */
  const sliceArb = fc.tuple(fc.subarray([1, 2, 3], { minLength: 1 }), fc.nat()).map(([offsets, t]) => ({ offsets, t: 1 + (t % offsets.length) }));
  type SliceShape = { offsets: number[]; t: number };
  type Action = { kind: 'vote'; who: number; value: 'yes' | 'no'; phase: Vote['phase']; slice: SliceShape } | { kind: 'publish'; who: number; slice: SliceShape };
  const voteArb: fc.Arbitrary<Action> = fc.record({ kind: fc.constant('vote' as const), who: fc.nat({ max: 3 }), value: fc.constantFrom('yes' as const, 'no' as const), phase: fc.constantFrom('vote' as const, 'accept' as const, 'confirm' as const), slice: sliceArb });
  const publishArb: fc.Arbitrary<Action> = fc.record({ kind: fc.constant('publish' as const), who: fc.nat({ max: 3 }), slice: sliceArb });
  const action = fc.oneof({ weight: 4, arbitrary: voteArb }, { weight: 1, arbitrary: publishArb });
  const sliceOf = (who: number, shape: SliceShape) => slice(shape.t, shape.offsets.map((o) => keys[(who + o) % 4] as NodeKey));

  async function assertMonotone(actions: Action[], wipeFloors: boolean): Promise<void> {
    store.db.prepare('DELETE FROM votes').run();
    // A statement's other documents go with it (they never outlive it in a relay).
    store.db.prepare('DELETE FROM vote_documents').run();
    store.db.prepare('DELETE FROM slices').run();
    store.db.prepare('DELETE FROM bulletin_floors').run();
    voting.forgetCached();
    const best = new Map<string, number>();
    for (const a of actions) {
      const key = keys[a.who] as NodeKey;
      if (a.kind === 'vote') await store1(statement(key, a.value, a.phase, sliceOf(a.who, a.slice)));
      else await store.tx(voting.setSlice(key.nodeId, sliceOf(a.who, a.slice), false, ++nowMs));
      if (wipeFloors) store.db.prepare('DELETE FROM bulletin_floors').run();
      for (const node of keys) {
        const rank = bulletinRank[(await store.plain(voting.bulletin(item, node.nodeId))).state];
        expect(rank).toBeGreaterThanOrEqual(best.get(node.nodeId) ?? 0);
        best.set(node.nodeId, rank);
      }
    }
  }

  it('statements with changing slices and no published slices: the tally alone is monotone (floors wiped)', async () => {
    // A node's slice comes only from its statements here, so this checks the declared-slices rule by
    // itself (going from a published slice to the one in a first statement is the floor's job).
    await fc.assert(
      fc.asyncProperty(fc.array(voteArb, { maxLength: 14 }), (votes) => assertMonotone(votes, true)),
      { numRuns: 80 },
    );
  });

  it('statements and published slice changes in any order: the reported bulletin is monotone', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(action, { maxLength: 16 }), (actions) => assertMonotone(actions, false)),
      { numRuns: 60 },
    );
  });
});
