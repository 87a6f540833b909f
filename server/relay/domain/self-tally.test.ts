import { createClock } from '@sinonjs/fake-timers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { applyFloor, signedAmong } from './bulletin-floor.js';
import { type NodeKey, generateNodeKey } from '../../../core/relay/node-id.js';
import { type QuorumSet, normalizeQuorumSet, quorumSetHash } from '../../../core/relay/quorum-set.js';
import { signVote } from '../../../core/relay/vote.js';
import { RelayStore } from '../relay-store.js';
import { tempDataDir } from '../../../test/support/relay-test-kit.js';
import type { SliceBook } from './slice-book.js';
import { hashOf, tallyItem } from './voting-tally.js';
import { Voting } from './voting.js';

/**
 * The relay node's kept tally (`SelfTallies`, issue 18) against the full reference (`tallyItem`,
 * floored the same way) through the real write paths: statements stored one by one with the relay
 * node emitting what it must, voters changing the slice their statements declare, published
 * slices changing under them, and a rollback.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 25, 12)));
const item = 'cd'.repeat(32);
const keys: NodeKey[] = Array.from({ length: 5 }, () => generateNodeKey());
const relayKey = generateNodeKey();
const ids = keys.map((k) => k.nodeId);
const others = (k: number) => ids.filter((_, j) => j !== k);

const sliceArb = (k: number): fc.Arbitrary<QuorumSet> =>
  fc.shuffledSubarray(others(k), { minLength: 1 }).chain((v) => fc.integer({ min: 1, max: v.length }).map((t) => normalizeQuorumSet({ t, v, i: [] })));

type Op =
  | { kind: 'statement'; voter: number; value: 'yes' | 'no'; phase: 'vote' | 'accept' | 'confirm'; slice: QuorumSet | null }
  | { kind: 'publish'; node: number; slice: QuorumSet }
  | { kind: 'rollback'; voter: number };

const opArb: fc.Arbitrary<Op> = fc.integer({ min: 0, max: keys.length - 1 }).chain((n) =>
  fc.oneof(
    { weight: 8, arbitrary: fc.record({ kind: fc.constant('statement' as const), voter: fc.constant(n), value: fc.constantFrom('yes' as const, 'no' as const), phase: fc.constantFrom('vote' as const, 'accept' as const, 'confirm' as const), slice: fc.option(sliceArb(n), { nil: null }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('publish' as const), node: fc.constant(n), slice: sliceArb(n) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('rollback' as const), voter: fc.constant(n) }) },
  ),
);

describe("the relay node's kept tally", () => {
  it('answers what the full tally answers after every write, slice changes and rollbacks included', async () => {
    await fc.assert(
      fc.asyncProperty(fc.shuffledSubarray(ids, { minLength: 1 }), fc.array(opArb, { maxLength: 30 }), fc.constantFrom(undefined, 3), async (relayMembers, ops, keptStatements) => {
        const data = tempDataDir('self-tally-');
        const store = new RelayStore(data.dir);
        try {
          const selfSlice = normalizeQuorumSet({ t: Math.ceil(relayMembers.length / 2), v: relayMembers, i: [] });
          // Kept tallies bounded to a few statements: forgetting and building again is exercised too.
          const voting = new Voting({ store, clock, selfKey: relayKey, selfSlice, keptTallyStatements: keptStatements });
          store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 't', ?, 0)").run(item, ids[0]);
          let now = 1000;
          for (const op of ops) {
            now += 1000;
            if (op.kind === 'publish') {
              await store.tx(voting.setSlice(ids[op.node] as string, op.slice, false, now));
            } else {
              const key = keys[op.kind === 'statement' ? op.voter : op.voter] as NodeKey;
              const value = op.kind === 'statement' ? op.value : 'yes';
              const phase = op.kind === 'statement' ? op.phase : 'vote';
              const slice = op.kind === 'statement' ? op.slice : null;
              // No slice drawn: the statement names the voter's published slice by hash (or, without one, a fixed slice).
              const published = await store.plain(voting.publishedSlice(key.nodeId));
              const declared = slice ? { slice } : published ? { slice_hash: published.hash } : { slice: normalizeQuorumSet({ t: 1, v: others(keys.indexOf(key)), i: [] }) };
              const signed = signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: key.nodeId, value, phase, ...declared, created_at: Math.floor(now / 1000) }, key.secretKey);
              const write = function* () {
                const stored = yield* voting.storeVote(signed, null, now);
                if (stored.stored) yield* voting.retallySelf(item, now);
                if (op.kind === 'rollback') throw new Error('rolled back on purpose');
              };
              if (op.kind === 'rollback') await expect(store.tx(write)).rejects.toThrow('on purpose');
              else await store.tx(write);
            }
            const statements = await store.plain(voting.statements(item));
            const selfSliceNow = await store.plain(voting.selfSlice());
            const reference = tallyItem({ itemId: item, nodeId: relayKey.nodeId, statements, selfNodeId: relayKey.nodeId }, await store.plain(sliceBookOf(voting).lookupsFor(statements, [relayKey.nodeId])), () => selfSliceNow);
            const expected = applyFloor(reference, await store.plainData.votes.floorOf(item, relayKey.nodeId), signedAmong(statements, relayKey.nodeId));
            const { sliceChangers, ...kept } = await store.plain(voting.bulletin(item, relayKey.nodeId));
            expect(kept).toEqual(expected);
            expect(sliceChangers).toEqual((await store.plain(voting.bulletin(item, ids[0] as string))).sliceChangers);
          }
        } finally {
          await store.close();
          data.remove();
        }
      }),
      { numRuns: 150 },
    );
    // 150 runs of a growing store take 20-30 s on a loaded 2-core machine: a bound, not a speed goal.
  }, 120_000);
});

/** The voting's slice book, for the reference tally (the same published slices it reads). */
function sliceBookOf(voting: Voting): SliceBook {
  return (voting as unknown as { slices: SliceBook }).slices;
}

describe('the kept tallies and statements, bounded', () => {
  it('forget the least recently used item past the bound and read or build it again when needed', async () => {
    const data = tempDataDir('self-tally-bound-');
    const store = new RelayStore(data.dir);
    try {
      const other = 'ef'.repeat(32);
      const selfSlice = normalizeQuorumSet({ t: 2, v: ids.slice(0, 3), i: [] });
      // Both in-memory bounds tiny: statements and tallies are forgotten and read or built again.
      const voting = new Voting({ store, clock, selfKey: relayKey, selfSlice, keptTallyStatements: 2, cachedStatements: 2 });
      for (const id of [item, other]) store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 't', ?, 0)").run(id, ids[0]);
      const sign = (k: number, onItem: string, phase: 'vote' | 'accept') =>
        signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item: onItem, voter: ids[k] as string, value: 'yes', phase, slice: normalizeQuorumSet({ t: 1, v: others(k).slice(0, 2), i: [] }), created_at: 1 }, (keys[k] as NodeKey).secretKey);
      const reference = async (onItem: string) => {
        const statements = await store.plain(voting.statements(onItem));
        const selfSliceNow = await store.plain(voting.selfSlice());
        const full = tallyItem({ itemId: onItem, nodeId: relayKey.nodeId, statements, selfNodeId: relayKey.nodeId }, await store.plain(sliceBookOf(voting).lookupsFor(statements, [relayKey.nodeId])), () => selfSliceNow);
        return applyFloor(full, await store.plainData.votes.floorOf(onItem, relayKey.nodeId), signedAmong(statements, relayKey.nodeId));
      };
      // Alternating items with a bound of 2 statements: every switch forgets the other item's tally.
      for (const [k, phase] of [[0, 'vote'], [1, 'vote'], [2, 'vote'], [0, 'accept'], [1, 'accept']] as const) {
        for (const onItem of [item, other]) {
          await store.tx(function* () {
            yield* voting.storeVote(sign(k, onItem, phase), null, clock.nowMs());
            yield* voting.retallySelf(onItem, clock.nowMs());
          });
          const { sliceChangers: _changers, ...kept } = await store.plain(voting.bulletin(onItem, relayKey.nodeId));
          expect(kept).toEqual(await reference(onItem));
          expect((await store.plain(voting.statements(onItem))).map((v) => v.sig).sort()).toEqual((store.db.prepare('SELECT doc FROM votes WHERE item_id = ?').pluck().all(onItem) as string[]).map((d) => (JSON.parse(d) as { sig: string }).sig).sort());
        }
      }
      expect((await store.plain(voting.bulletin(item, relayKey.nodeId))).state).toBe('confirmed');
    } finally {
      await store.close();
      data.remove();
    }
  });
});

describe("an inline slice's hash, computed once", () => {
  it('is handed from the statement log to the tallies with the parsed statement, equal to the slice_hash', async () => {
    const data = tempDataDir('self-tally-hash-');
    const store = new RelayStore(data.dir);
    try {
      const voting = new Voting({ store, clock, selfKey: relayKey, selfSlice: normalizeQuorumSet({ t: 1, v: ids.slice(0, 2), i: [] }) });
      store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 't', ?, 0)").run(item, ids[0]);
      // Spelled unsorted: the hash is the normalised set's, whatever order the voter sent.
      const slice = { t: 2, v: [...others(0)].reverse(), i: [] };
      const signed = signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: ids[0] as string, value: 'yes', phase: 'vote', slice, created_at: 1 }, (keys[0] as NodeKey).secretKey);
      await store.tx(voting.storeVote(signed, null, clock.nowMs()));
      const [stored] = await store.plain(voting.statements(item));
      expect(hashOf(stored?.slice as QuorumSet)).toBe(quorumSetHash(slice));
    } finally {
      await store.close();
      data.remove();
    }
  });
});
