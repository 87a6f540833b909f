import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { type NodeKey, generateNodeKey } from '../../../core/relay/node-id.js';
import type { QuorumSet } from '../../../core/relay/quorum-set.js';
import { type UnsignedVote, type Vote, signVote } from '../../../core/relay/vote.js';
import { tempDataDir } from '../../../test/support/relay-test-kit.js';
import { RelayStore } from '../relay-store.js';
import { Voting } from './voting.js';

/**
 * What the statement log keeps of a stored statement is what a read of its stored text gives,
 * whether it was parsed back or copied (a statement whose slice is the voter's kept one and that
 * holds nothing JSON changes, decision 1160), and a voter's equal inline slices are one object.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 30, 12)));
const item = 'ab'.repeat(32);
const [x, y, z] = [generateNodeKey(), generateNodeKey(), generateNodeKey()] as [NodeKey, NodeKey, NodeKey];
const opened: { store: RelayStore; remove: () => void }[] = [];

afterEach(() => {
  for (const { store, remove } of opened.splice(0)) {
    store.close();
    remove();
  }
});

function relay(): { store: RelayStore; voting: Voting } {
  const data = tempDataDir('statement-log-copies-');
  const store = new RelayStore(data.dir);
  opened.push({ store, remove: data.remove });
  store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 't', ?, 0)").run(item, x.nodeId);
  return { store, voting: new Voting({ store, clock, selfKey: generateNodeKey(), selfSlice: { t: 1, v: [y.nodeId], i: [] } }) };
}

/** A fresh slice object each time, as each request's body parses into. */
const sliceOfX = (): QuorumSet => ({ t: 2, v: [y.nodeId, z.nodeId].sort(), i: [] });

function signed(key: NodeKey, fields: Partial<UnsignedVote>): Vote {
  return signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: key.nodeId, value: 'yes', phase: 'vote', slice: sliceOfX(), created_at: 1_800_000_000, ...fields } as UnsignedVote, key.secretKey);
}

describe('the statement log keeps what a read of the stored text gives', () => {
  it('for statements copied and parsed back alike, with equal inline slices shared and each slice stored once', async () => {
    const r = relay();
    const statements = [
      signed(x, { phase: 'vote' }),
      // The same slice again (another object): copied, not parsed back.
      signed(x, { phase: 'accept' }),
      // A hint (anything, unsigned) is parsed back: what JSON makes of it (a Date as its text) is what a read gives.
      { ...signed(x, { phase: 'confirm' }), hint: { route: ['a', 'b'], at: new Date(0) } },
      signed(x, { value: 'no', phase: 'vote', created_at: 1_800_000_001 }),
      // Another voter, another slice.
      signed(y, { slice: { t: 1, v: [z.nodeId], i: [] } }),
    ];
    // Read once first: the item's statements are then kept, and each stored one is placed among them.
    expect(await r.store.plain(r.voting.statements(item))).toEqual([]);
    for (const vote of statements) {
      const stored = await r.store.tx(function* () {
        return yield* r.voting.storeVote(vote, null, clock.nowMs());
      });
      expect(stored.stored).toBe(true);
    }
    const kept = await r.store.plain(r.voting.statements(item));
    r.voting.forgetCached();
    const read = await r.store.plain(r.voting.statements(item));
    expect(kept).toStrictEqual(read);
    // Stored in one millisecond, the statements are in the database's order: by voter (random keys), value, phase.
    const keptOf = (voter: NodeKey, value: string, phase: string) => kept.find((v) => v.voter === voter.nodeId && v.value === value && v.phase === phase) as Vote;
    expect(keptOf(x, 'yes', 'confirm').hint).toEqual({ route: ['a', 'b'], at: new Date(0).toISOString() });
    expect(kept.map((v) => v.phase)).toEqual(read.map((v) => v.phase));
    for (let k = 0; k < kept.length; k++) expect(Object.keys(kept[k] as Vote)).toEqual(Object.keys(read[k] as Vote));
    for (const vote of kept) expect(Object.isFrozen(vote)).toBe(true);
    const xs = kept.filter((v) => v.voter === x.nodeId);
    expect(xs).toHaveLength(4);
    for (const vote of xs) expect(vote.slice).toBe(xs[0]?.slice);
    // The caller's objects are not what is kept.
    expect(keptOf(x, 'yes', 'accept')).not.toBe(statements[1]);
    expect(xs[0]?.slice).not.toBe(statements[0]?.slice);
    // x's and y's: x's once, though three of its statements carried it.
    expect(r.store.db.prepare('SELECT COUNT(*) AS n FROM qsets').get()).toEqual({ n: 2 });
  });

  it('after a rollback, stores the slice of a statement whose kept slice went with it', async () => {
    const r = relay();
    await expect(
      r.store.tx(function* () {
        yield* r.voting.storeVote(signed(x, { phase: 'vote' }), null, clock.nowMs());
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await r.store.tx(function* () {
      yield* r.voting.storeVote(signed(x, { phase: 'accept' }), null, clock.nowMs());
    });
    // Without the rollback emptying the kept slice, the accept would have skipped storing it: no row.
    const rows = r.store.db.prepare('SELECT qset FROM qsets').all() as { qset: string }[];
    expect(rows.map((row) => JSON.parse(row.qset) as QuorumSet)).toEqual([sliceOfX()]);
  });
});
