import { createHash } from 'node:crypto';
import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { type NodeKey, generateNodeKey } from '../../../core/relay/node-id.js';
import { type QuorumSet, normalizeQuorumSet } from '../../../core/relay/quorum-set.js';
import { signVote } from '../../../core/relay/vote.js';
import { RelayStore } from '../relay-store.js';
import { tempDataDir } from '../../../test/support/relay-test-kit.js';
import { applyFloor, signedAmong } from './bulletin-floor.js';
import type { SelfTallies } from './self-tally.js';
import type { SliceBook } from './slice-book.js';
import { tallyItem } from './voting-tally.js';
import { Voting } from './voting.js';

/**
 * Slice changers (hostile19): voters that sign vote, accept and confirm on one item each under a
 * different nested slice. The relay node's kept tally used to be built again from every stored
 * statement at each slice change, so a round cost O(n^2) (53 ms per vote growing to 533 ms over
 * 150 statements). Counted, not timed: the tally is built once, and the quorum work over the round
 * stays within a constant per statement.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 30, 7)));
const item = 'ce'.repeat(32);
const voterCount = 24;
const keys: NodeKey[] = Array.from({ length: voterCount }, () => generateNodeKey());
const ids = keys.map((k) => k.nodeId);
const relayKey = generateNodeKey();

/**
 * Three levels like the hostile client's: the other voters and made-up ids in groups of 5, groups of
 * 3 of them. `reachable`: one made-up id per group (the voters alone satisfy it); else the made-up
 * ids come last and fill whole groups (never satisfied: the voter stays out until a later slice).
 */
function nestedSlice(self: string, seed: string, reachable: boolean): QuorumSet {
  const others = ids.filter((id) => id !== self);
  const made = (k: number) => createHash('sha256').update(`${seed}:${k}`).digest('hex');
  const all: string[] = [];
  if (reachable) others.forEach((id, k) => all.push(...(k % 4 === 0 ? [made(k), id] : [id])));
  else all.push(...others, ...Array.from({ length: 13 }, (_, k) => made(k)));
  const leaves: QuorumSet[] = [];
  for (let k = 0; k < all.length; k += 5) leaves.push({ t: Math.ceil(all.slice(k, k + 5).length * 0.67), v: all.slice(k, k + 5), i: [] });
  const mids: QuorumSet[] = [];
  for (let k = 0; k < leaves.length; k += 3) mids.push({ t: Math.min(2, leaves.slice(k, k + 3).length), v: [], i: leaves.slice(k, k + 3) });
  return normalizeQuorumSet({ t: Math.ceil(mids.length * 0.67), v: [], i: mids });
}

describe('the relay node kept tally under slice changers', () => {
  it('is built once and follows each further slice in place, with quorum work linear in the statements', async () => {
    const data = tempDataDir('self-tally-changers-');
    const store = new RelayStore(data.dir);
    try {
      // The relay's slice names the voters, so their statements are what its bulletin rests on.
      const selfSlice = normalizeQuorumSet({ t: Math.ceil(ids.length * 0.67), v: ids, i: [] });
      const voting = new Voting({ store, clock, selfKey: relayKey, selfSlice });
      store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 't', ?, 0)").run(item, ids[0]);
      const tallies = (voting as unknown as { selfTallies: SelfTallies }).selfTallies;
      let statementCount = 0;
      let now = clock.nowMs();
      for (const phase of ['vote', 'accept', 'confirm'] as const) {
        for (const [k, key] of keys.entries()) {
          now += 1000;
          const slice = nestedSlice(key.nodeId, `${k}${phase}`, phase !== 'vote');
          const signed = signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: key.nodeId, value: 'yes', phase, slice, created_at: Math.floor(now / 1000) }, key.secretKey);
          await store.tx(function* () {
            const stored = yield* voting.storeVote(signed, null, now);
            if (stored.stored) yield* voting.retallySelf(item, now);
          });
          await store.plain(voting.bulletin(item, relayKey.nodeId));
          statementCount++;
        }
      }
      // One build (the first bulletin); before the fix, one more per slice change (2 per voter).
      expect(tallies.builds).toBe(1);
      expect(tallies.work(item)?.relaxations).toBeGreaterThan(0);
      // Quorum work amortized linear in the statements: a join (or a relaxation) that reshapes the
      // quorum may peel everything once, but that happens a bounded number of times per round.
      expect(tallies.work(item)?.steps).toBeLessThanOrEqual(10 * statementCount);
      // And the answer is still the full reference tally's.
      const statements = await store.plain(voting.statements(item));
      const slices = (voting as unknown as { slices: SliceBook }).slices;
      const reference = tallyItem({ itemId: item, nodeId: relayKey.nodeId, statements, selfNodeId: relayKey.nodeId }, await store.plain(slices.lookupsFor(statements, [relayKey.nodeId])), () => selfSlice);
      const { sliceChangers, ...kept } = await store.plain(voting.bulletin(item, relayKey.nodeId));
      expect(kept).toEqual(applyFloor(reference, await store.plainData.votes.floorOf(item, relayKey.nodeId), signedAmong(statements, relayKey.nodeId)));
      expect(kept.state).toBe('confirmed');
      expect(sliceChangers).toEqual([...ids].sort());
    } finally {
      await store.close();
      data.remove();
    }
  }, 60_000);
});
