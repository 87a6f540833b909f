import { createClock } from '@sinonjs/fake-timers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { type NodeKey, generateNodeKey } from '../../../core/relay/node-id.js';
import { type QuorumSet, normalizeQuorumSet } from '../../../core/relay/quorum-set.js';
import { signVote } from '../../../core/relay/vote.js';
import { RelayStore } from '../relay-store.js';
import { tempDataDir } from '../../../test/support/relay-test-kit.js';
import { applyFloor, raisesFloor, signedAmong } from './bulletin-floor.js';
import type { SliceBook, SliceLookups } from './slice-book.js';
import { hashOf, sliceChangers, tallyItem } from './voting-tally.js';
import { type RelayBulletin, Voting } from './voting.js';

/**
 * Bulletins of nodes other than the relay's, kept between reads (`OtherBulletins`, decision 1080),
 * against the full reference (`tallyItem` over the statements and slices read afresh from the
 * database, floored the same way), through the real write paths: statements, published slices, the
 * relay node's default slice changing with its configured peers, rollbacks. Each node's bulletin is
 * read twice after every write; the second read is a lookup. And a voter's first statement that
 * replaces its published slice holds the floor the full tally would (the write path now runs that
 * tally only when the accepters of a value block the published slice).
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 30, 9)));
const item = 'cd'.repeat(32);
const keys: NodeKey[] = Array.from({ length: 5 }, () => generateNodeKey());
const relayKey = generateNodeKey();
const ids = keys.map((k) => k.nodeId);
/** A node that never votes and never publishes a slice. */
const stranger = generateNodeKey().nodeId;
const others = (k: number) => ids.filter((_, j) => j !== k);
const peerUrl = 'http://configured-peer.test';

const sliceArb = (k: number): fc.Arbitrary<QuorumSet> =>
  fc.shuffledSubarray(others(k), { minLength: 1 }).chain((v) => fc.integer({ min: 1, max: v.length }).map((t) => normalizeQuorumSet({ t, v, i: [] })));

type Op =
  | { kind: 'statement'; voter: number; value: 'yes' | 'no'; phase: 'vote' | 'accept' | 'confirm'; slice: QuorumSet | null; rollback: boolean }
  | { kind: 'publish'; node: number; slice: QuorumSet }
  | { kind: 'peer'; node: number };

const opArb: fc.Arbitrary<Op> = fc.integer({ min: 0, max: keys.length - 1 }).chain((n) =>
  fc.oneof(
    {
      weight: 8,
      arbitrary: fc.record({
        kind: fc.constant('statement' as const),
        voter: fc.constant(n),
        value: fc.constantFrom('yes' as const, 'no' as const),
        phase: fc.constantFrom('vote' as const, 'accept' as const, 'confirm' as const),
        slice: fc.option(sliceArb(n), { nil: null }),
        rollback: fc.boolean().map((b) => b && n % 2 === 0),
      }),
    },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('publish' as const), node: fc.constant(n), slice: sliceArb(n) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('peer' as const), node: fc.constant(n) }) },
  ),
);

/** The voting's slice book, for the reference tally. */
function sliceBookOf(voting: Voting): SliceBook {
  return (voting as unknown as { slices: SliceBook }).slices;
}

describe("other nodes' bulletins, kept between reads", () => {
  it('answer what the full tally answers after every write, and a read with nothing new computes nothing (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 24 }), fc.constantFrom(undefined, 2), async (ops, nodesPerItem) => {
        const data = tempDataDir('other-bulletins-');
        const store = new RelayStore(data.dir);
        try {
          // The relay node's slice is the default one: its operator, and the configured peer's relay node once known.
          const defaultSliceFrom = { operators: [ids[0] as string], configuredPeers: [peerUrl] };
          const voting = new Voting({ store, clock, selfKey: relayKey, defaultSliceFrom, cachedNodeBulletins: nodesPerItem });
          // The reference reads everything again from the database for each tally: caches emptied first.
          const fresh = new Voting({ store, clock, selfKey: relayKey, defaultSliceFrom });
          const reference = async (node: string): Promise<RelayBulletin> => {
            fresh.forgetCached();
            const statements = await store.plain(fresh.statements(item));
            const relaySlice = await store.plain(fresh.selfSlice());
            const lookups = await store.plain(sliceBookOf(fresh).lookupsFor(statements, [node]));
            const computed = tallyItem({ itemId: item, nodeId: node, statements, selfNodeId: relayKey.nodeId }, lookups, () => relaySlice);
            return { ...applyFloor(computed, await store.plainData.votes.floorOf(item, node), signedAmong(statements, node)), sliceChangers: sliceChangers(statements) };
          };
          store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 't', ?, 0)").run(item, ids[0]);
          store.db.prepare('INSERT INTO peers (url, added_ms) VALUES (?, 0)').run(peerUrl);
          let now = 1000;
          for (const op of ops) {
            now += 1000;
            if (op.kind === 'publish') await store.tx(voting.setSlice(ids[op.node] as string, op.slice, false, now));
            else if (op.kind === 'peer') store.db.prepare('UPDATE peers SET node_id = ? WHERE url = ?').run(ids[op.node], peerUrl);
            else {
              const key = keys[op.voter] as NodeKey;
              const published = await store.plain(voting.publishedSlice(key.nodeId));
              const declared = op.slice ? { slice: op.slice } : published ? { slice_hash: published.hash } : { slice: normalizeQuorumSet({ t: 1, v: others(op.voter), i: [] }) };
              const signed = signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: key.nodeId, value: op.value, phase: op.phase, ...declared, created_at: Math.floor(now / 1000) }, key.secretKey);
              // The floor the write path must leave: raised to the full tally's bulletin when this
              // is the voter's first statement and it replaces the voter's published slice.
              const floorBefore = await store.plainData.votes.floorOf(item, key.nodeId);
              let floorAfter = floorBefore;
              const firstHere = !(await store.plain(fresh.statements(item))).some((s) => s.voter === key.nodeId);
              if (published && firstHere && (signed.slice_hash ?? hashOf(signed.slice as QuorumSet)) !== published.hash) {
                const reported = await reference(key.nodeId);
                if (raisesFloor(reported, floorBefore)) floorAfter = { state: reported.state, value: reported.value, acceptedVia: reported.accepted_via };
              }
              const write = function* () {
                const stored = yield* voting.storeVote(signed, null, now);
                if (stored.stored || stored.keptAnotherDocument) yield* voting.retallySelf(item, now);
                if (op.rollback) throw new Error('rolled back on purpose');
              };
              if (op.rollback) await expect(store.tx(write)).rejects.toThrow('on purpose');
              else await store.tx(write);
              expect(await store.plainData.votes.floorOf(item, key.nodeId)).toEqual(op.rollback ? floorBefore : floorAfter);
            }
            for (const node of [...ids, stranger]) {
              const expected = await reference(node);
              expect(await store.plain(voting.bulletin(item, node))).toEqual(expected);
              const tallies = voting.otherBulletinTallies;
              expect(await store.plain(voting.bulletin(item, node))).toEqual(expected);
              // Read again with nothing new: a lookup (unless the bound of 2 nodes forgot it: never the node just read).
              expect(voting.otherBulletinTallies).toBe(tallies);
            }
          }
        } finally {
          await store.close();
          data.remove();
        }
      }),
      { numRuns: 120 },
    );
    // 120 runs of a growing store take ~20 s on a loaded 2-core machine: a bound, not a speed goal.
  }, 120_000);

  it("follow the relay node's slice when it changes with nothing else new", async () => {
    const data = tempDataDir('other-bulletins-relay-slice-');
    const store = new RelayStore(data.dir);
    try {
      const voting = new Voting({ store, clock, selfKey: relayKey, defaultSliceFrom: { operators: [ids[0] as string], configuredPeers: [peerUrl] } });
      store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 't', ?, 0)").run(item, ids[0]);
      store.db.prepare('INSERT INTO peers (url, added_ms) VALUES (?, 0)').run(peerUrl);
      const trustingRelay = { t: 1, v: [relayKey.nodeId], i: [] };
      const sign = (k: number, phase: 'vote' | 'accept') => signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: ids[k] as string, value: 'yes', phase, slice: trustingRelay, created_at: 1 }, (keys[k] as NodeKey).secretKey);
      // ids[0] accepts yes; the relay (its slice: ids[0]) is v-blocked and accepts too; ids[1] votes.
      for (const vote of [sign(0, 'accept'), sign(1, 'vote')]) {
        await store.tx(function* () {
          yield* voting.storeVote(vote, null, clock.nowMs());
          yield* voting.retallySelf(item, clock.nowMs());
        });
      }
      // ids[0], ids[1] and the relay are a quorum: ids[1] confirms.
      expect(await store.plain(voting.bulletin(item, ids[1] as string))).toMatchObject({ state: 'confirmed', accepted_via: 'quorum' });
      // The configured peer's relay node becomes known: the relay's slice now needs ids[2] too, who said nothing.
      store.db.prepare('UPDATE peers SET node_id = ? WHERE url = ?').run(ids[2], peerUrl);
      expect(await store.plain(voting.bulletin(item, ids[1] as string))).toMatchObject({ state: 'accepted', accepted_via: 'v-blocking' });
    } finally {
      await store.close();
      data.remove();
    }
  });

  it('are forgotten with the statements they were computed from, and a further read of each node computes it once', async () => {
    const data = tempDataDir('other-bulletins-count-');
    const store = new RelayStore(data.dir);
    try {
      const voting = new Voting({ store, clock, selfKey: relayKey, selfSlice: normalizeQuorumSet({ t: 2, v: ids.slice(0, 3), i: [] }) });
      store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 't', ?, 0)").run(item, ids[0]);
      const sign = (k: number, phase: 'vote' | 'accept') =>
        signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: ids[k] as string, value: 'yes', phase, slice: normalizeQuorumSet({ t: 2, v: others(k).slice(0, 3), i: [] }), created_at: 1 }, (keys[k] as NodeKey).secretKey);
      for (let k = 0; k < keys.length; k++) await store.tx(voting.storeVote(sign(k, 'vote'), null, clock.nowMs()));
      const readAll = async (times: number) => {
        for (let r = 0; r < times; r++) for (const node of [...ids, stranger]) await store.plain(voting.bulletin(item, node));
      };
      await readAll(10);
      // Six nodes read ten times each: six tallies.
      expect(voting.otherBulletinTallies).toBe(6);
      // A new statement: each node's next read is one tally again, then lookups.
      await store.tx(voting.storeVote(sign(0, 'accept'), null, clock.nowMs()));
      await readAll(10);
      expect(voting.otherBulletinTallies).toBe(12);
      // A repeated statement stores nothing: still lookups.
      await store.tx(voting.storeVote(sign(0, 'accept'), null, clock.nowMs()));
      await readAll(3);
      expect(voting.otherBulletinTallies).toBe(12);
      // A published slice, anyone's, may change any bulletin: computed again.
      await store.tx(voting.setSlice(stranger, normalizeQuorumSet({ t: 1, v: [ids[1] as string], i: [] }), false, clock.nowMs()));
      await readAll(3);
      expect(voting.otherBulletinTallies).toBe(18);
      // The caches emptied (a rollback, another replica's commit): computed again.
      voting.forgetCached();
      await readAll(3);
      expect(voting.otherBulletinTallies).toBe(24);
    } finally {
      await store.close();
      data.remove();
    }
  });
  it('keep no more than the voters\' slices and the nodes cached, however many distinct nodes a client reads', async () => {
    const data = tempDataDir('other-bulletins-bound-');
    const store = new RelayStore(data.dir);
    try {
      const cachedNodeBulletins = 8;
      const voting = new Voting({ store, clock, selfKey: relayKey, cachedNodeBulletins });
      store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 't', ?, 0)").run(item, ids[0]);
      // Two voters, one by hash of the slice it published (its published slice is looked up), one inline.
      const published = await store.tx(voting.setSlice(ids[1] as string, normalizeQuorumSet({ t: 1, v: [ids[0] as string], i: [] }), false, clock.nowMs()));
      const voteOf = (k: number, declared: object) => signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: ids[k] as string, value: 'yes', phase: 'vote', ...declared, created_at: 1 }, (keys[k] as NodeKey).secretKey);
      await store.tx(voting.storeVote(voteOf(0, { slice: normalizeQuorumSet({ t: 1, v: [ids[1] as string], i: [] }) }), null, clock.nowMs()));
      await store.tx(voting.storeVote(voteOf(1, { slice_hash: published.hash }), null, clock.nowMs()));
      const others = (voting as unknown as { others: { items: WeakMap<readonly unknown[], { lookups: SliceLookups; nodes: { size: number } }> } }).others;
      // Nodes a client makes up (well formed, never seen), three times as many as are cached.
      for (let k = 0; k < 3 * cachedNodeBulletins; k++) await store.plain(voting.bulletin(item, generateNodeKey().nodeId));
      const reading = others.items.get(await store.plain(voting.statements(item)));
      expect(reading).toBeDefined();
      expect(reading?.lookups.published.size).toBeLessThanOrEqual(2);
      expect(reading?.nodes.size).toBeLessThanOrEqual(cachedNodeBulletins);
      expect(voting.otherBulletinTallies).toBe(3 * cachedNodeBulletins);
      // The answers do not change: a node that published a slice and never voted reads it as before.
      await store.tx(voting.setSlice(stranger, normalizeQuorumSet({ t: 1, v: [ids[0] as string], i: [] }), false, clock.nowMs()));
      expect((await store.plain(voting.bulletin(item, stranger))).slice_hash).not.toBeNull();
    } finally {
      await store.close();
      data.remove();
    }
  });
});

describe("a voter's first statement that replaces its published slice", () => {
  it('runs its full tally, to hold its floor, only when the accepters of a value block the published slice', async () => {
    const data = tempDataDir('other-bulletins-first-');
    const store = new RelayStore(data.dir);
    try {
      const voting = new Voting({ store, clock, selfKey: relayKey, selfSlice: normalizeQuorumSet({ t: 1, v: [ids[0] as string], i: [] }) });
      store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 't', ?, 0)").run(item, ids[0]);
      const only = (k: number): QuorumSet => ({ t: 1, v: [ids[k] as string], i: [] });
      const sign = (k: number, phase: 'vote' | 'accept', slice: QuorumSet) => signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: ids[k] as string, value: 'yes', phase, slice, created_at: 1 }, (keys[k] as NodeKey).secretKey);
      await store.tx(voting.setSlice(ids[3] as string, only(4), false, 1));
      await store.tx(voting.setSlice(ids[2] as string, only(4), false, 1));
      // Nobody accepted anything: ids[3] ranks `uncommitted` under its published slice, nothing to hold, no tally.
      await store.tx(voting.storeVote(sign(3, 'vote', only(0)), null, 2));
      expect(voting.otherBulletinTallies).toBe(0);
      expect(await store.plainData.votes.floorOf(item, ids[3] as string)).toBeUndefined();
      // ids[4] accepts yes: it blocks ids[2]'s published slice, so ids[2]'s first statement holds its floor.
      await store.tx(voting.storeVote(sign(4, 'accept', only(3)), null, 3));
      await store.tx(voting.storeVote(sign(2, 'vote', only(0)), null, 4));
      expect(voting.otherBulletinTallies).toBe(1);
      expect(await store.plainData.votes.floorOf(item, ids[2] as string)).toEqual({ state: 'accepted', value: 'yes', acceptedVia: 'v-blocking' });
      expect(await store.plain(voting.bulletin(item, ids[2] as string))).toMatchObject({ state: 'accepted', value: 'yes', toEmit: [{ value: 'yes', phase: 'accept' }] });
    } finally {
      await store.close();
      data.remove();
    }
  });
});
