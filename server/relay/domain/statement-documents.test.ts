import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { type NodeKey, generateNodeKey } from '../../../core/relay/node-id.js';
import type { QuorumSet } from '../../../core/relay/quorum-set.js';
import { type Vote, signVote } from '../../../core/relay/vote.js';
import { RelayStore } from '../relay-store.js';
import { MAX_OTHER_DOCUMENTS, type StoredVote } from './statement-log.js';
import { tempDataDir } from '../../../test/support/relay-test-kit.js';
import { Voting } from './voting.js';

/**
 * A voter's several signed documents of one statement (same voter, item, value and phase; another
 * created_at or slice): every relay keeps them all, whatever order they arrive in, and so answers
 * the same bulletins (issue 18, convergence). First-come kept one, and relays diverged for good.
 */
const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 25, 12)));
const item = 'cd'.repeat(32);
const [x, y, z] = [generateNodeKey(), generateNodeKey(), generateNodeKey()] as [NodeKey, NodeKey, NodeKey];
const relayKey = generateNodeKey();
const opened: { store: RelayStore; remove: () => void }[] = [];

function relay(): { store: RelayStore; voting: Voting } {
  const data = tempDataDir('statement-documents-');
  const store = new RelayStore(data.dir);
  opened.push({ store, remove: data.remove });
  store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 't', ?, 0)").run(item, x.nodeId);
  return { store, voting: new Voting({ store, clock, selfKey: relayKey, selfSlice: { t: 2, v: [x.nodeId, y.nodeId].sort(), i: [] } }) };
}

function statement(key: NodeKey, slice: QuorumSet, createdAt: number, phase: 'vote' | 'accept' = 'vote'): Vote {
  return signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: key.nodeId, value: 'yes', phase, slice, created_at: createdAt }, key.secretKey);
}

/** Stores each as the write paths do (the relay node re-tallies after a new statement or document). */
async function deliver(r: { store: RelayStore; voting: Voting }, votes: readonly Vote[]): Promise<StoredVote[]> {
  const outcomes: StoredVote[] = [];
  for (const vote of votes) {
    outcomes.push(
      await r.store.tx(function* () {
        const stored = yield* r.voting.storeVote(vote, null, clock.nowMs());
        if (stored.stored || stored.keptAnotherDocument) yield* r.voting.retallySelf(item, clock.nowMs());
        return stored;
      }),
    );
  }
  return outcomes;
}

const bySig = (votes: readonly Vote[]) => [...votes].sort((a, b) => (a.sig < b.sig ? -1 : 1));

afterEach(() => {
  for (const { store, remove } of opened.splice(0)) {
    store.close();
    remove();
  }
});

describe("a statement's other documents", () => {
  it('are kept and counted whatever order they arrive in: two relays hold the same documents and answer the same bulletins', async () => {
    // x votes yes twice: once trusting y and z both, once trusting y alone. y votes trusting x.
    const strict = statement(x, { t: 2, v: [y.nodeId, z.nodeId].sort(), i: [] }, 100);
    const loose = statement(x, { t: 1, v: [y.nodeId], i: [] }, 200);
    const fromY = statement(y, { t: 1, v: [x.nodeId], i: [] }, 100);
    const first = relay();
    const second = relay();
    expect((await deliver(first, [strict, fromY, loose])).map((o) => [o.stored, o.duplicate, o.keptAnotherDocument ?? false])).toEqual([
      [true, false, false],
      [true, false, false],
      [false, true, true],
    ]);
    await deliver(second, [loose, fromY, strict]);
    expect(bySig((await first.store.plain(first.voting.statements(item))).filter((s) => s.voter !== relayKey.nodeId))).toEqual(bySig([strict, loose, fromY]));
    expect(bySig((await second.store.plain(second.voting.statements(item))).filter((s) => s.voter !== relayKey.nodeId))).toEqual(bySig([strict, loose, fromY]));
    for (const node of [relayKey.nodeId, x.nodeId, y.nodeId]) expect(await first.store.plain(first.voting.bulletin(item, node))).toEqual(await second.store.plain(second.voting.bulletin(item, node)));
    // Under x's loose slice {x, y} is a quorum of yes voters, so y accepts; under the strict one alone
    // it would not. First-come kept `strict` on the first relay and `loose` on the second: y's
    // bulletin differed between them for good.
    expect(await first.store.plain(first.voting.bulletin(item, y.nodeId))).toMatchObject({ state: 'accepted', value: 'yes', accepted_via: 'quorum', sliceChangers: [x.nodeId] });
  });

  it('the same document again (even with another hint) is a plain duplicate; past the bound another one is not kept', async () => {
    const r = relay();
    const documents = Array.from({ length: MAX_OTHER_DOCUMENTS + 2 }, (_, k) => statement(x, { t: 1, v: [y.nodeId], i: [] }, 100 + k));
    const outcomes = await deliver(r, [documents[0]!, { ...documents[0]!, hint: 'again' } as Vote, ...documents.slice(1)]);
    expect(outcomes.map((o) => o.keptAnotherDocument ?? false)).toEqual([false, false, ...Array.from({ length: MAX_OTHER_DOCUMENTS }, () => true), false]);
    expect((await r.store.plain(r.voting.statements(item))).filter((s) => s.voter === x.nodeId)).toHaveLength(1 + MAX_OTHER_DOCUMENTS);
    // Every kept document is published for peers; the refused one is not.
    expect(r.store.db.prepare("SELECT COUNT(*) AS n FROM events WHERE kind = 'vote' AND author = ?").get(x.nodeId)).toEqual({ n: 1 + MAX_OTHER_DOCUMENTS });
  });

  it('stores and publishes each document as its JSON text, the event payload being {"vote": ...}', async () => {
    const r = relay();
    const kept = [statement(x, { t: 1, v: [y.nodeId], i: [] }, 100), { ...statement(x, { t: 1, v: [y.nodeId], i: [] }, 101), hint: { route: ['a', 'é'] } } as Vote];
    await deliver(r, kept);
    const events = (await r.store.plain(r.store.data.events.after(0, [x.nodeId], 100))).filter((e) => e.kind === 'vote').map((e) => e.payload);
    expect(events).toEqual(kept.map((vote) => JSON.stringify({ vote })));
    // The first document is written once, in `votes`: its event names the statement (decision 1170);
    // another document's event keeps its text (the statement's name alone would not say which).
    const rows = r.store.db.prepare("SELECT payload, vote_value, vote_phase FROM events WHERE kind = 'vote' AND author = ? ORDER BY seq").all(x.nodeId);
    expect(rows).toEqual([
      { payload: '', vote_value: 'yes', vote_phase: 'vote' },
      { payload: JSON.stringify({ vote: kept[1] }), vote_value: null, vote_phase: null },
    ]);
    const docs = r.store.db.prepare('SELECT doc FROM votes WHERE voter = ? UNION ALL SELECT doc FROM vote_documents WHERE voter = ?').pluck().all(x.nodeId, x.nodeId);
    expect(docs).toEqual(kept.map((vote) => JSON.stringify(vote)));
  });
});
