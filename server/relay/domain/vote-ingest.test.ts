import { EventEmitter } from 'node:events';
import { createClock } from '@sinonjs/fake-timers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { type NodeKey, generateNodeKey } from '../../../core/relay/node-id.js';
import { type Vote, signVote } from '../../../core/relay/vote.js';
import { RelayStore } from '../relay-store.js';
import { tempDataDir } from '../../../test/support/relay-test-kit.js';
import { VoteIngest } from './vote-ingest.js';
import { Voting } from './voting.js';

const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 25, 12)));
const item = 'cd'.repeat(32);
const [a, b, c] = [generateNodeKey(), generateNodeKey(), generateNodeKey()] as [NodeKey, NodeKey, NodeKey];
let data: ReturnType<typeof tempDataDir>;
let store: RelayStore;
let voting: Voting;
let ingest: VoteIngest;
let transactions: number;

function vote(key: NodeKey, onItem = item): Vote {
  return signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item: onItem, voter: key.nodeId, value: 'yes', phase: 'vote', slice: { t: 1, v: [c.nodeId], i: [] }, created_at: 1 }, key.secretKey);
}

beforeEach(async () => {
  data = tempDataDir('vote-ingest-');
  store = new RelayStore(data.dir);
  voting = new Voting({ store, clock, selfKey: generateNodeKey() });
  ingest = new VoteIngest(store, voting, 'ee'.repeat(32), () => clock.nowMs());
  store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 't', ?, 0)").run(item, a.nodeId);
  transactions = 0;
  const tx = store.tx.bind(store);
  store.tx = (steps) => {
    transactions++;
    return tx(steps);
  };
  const savepoint = store.savepoint.bind(store);
  store.savepoint = (steps) => {
    transactions++;
    return savepoint(steps);
  };
});
afterEach(() => {
  store.close();
  data.remove();
});

describe('VoteIngest (group commit of POST /items/{id}/vote)', () => {
  it('stores votes that arrive together in one transaction, each in its own savepoint: one that fails takes back only itself', async () => {
    // Another request in flight (waiting on something else), so these four arrive as concurrent ones do.
    let release = () => {};
    const otherAnswer = new EventEmitter();
    const other = ingest.request(otherAnswer, () => new Promise<void>((resolve) => (release = resolve)));
    const submitted = [vote(a), vote(b, 'ab'.repeat(32)), vote(b), vote(a)].map((v) => ingest.request(new EventEmitter(), () => ingest.submit(v)));
    const answers = await Promise.allSettled(submitted);
    release();
    await other;
    otherAnswer.emit('close');
    expect(answers.map((x) => x.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    const [first, , second, again] = answers as PromiseFulfilledResult<{ stored: boolean; duplicate: boolean; bulletin: { counts: { yes: { vote: number } } } }>[];
    expect(first!.value).toMatchObject({ stored: true, duplicate: false });
    expect(second!.value).toMatchObject({ stored: true, duplicate: false });
    // The same statement twice in one batch: the second is a duplicate, as it would be one request later.
    expect(again!.value).toMatchObject({ stored: false, duplicate: true });
    // Every answer is given after the commit: its bulletin counts what the batch stored.
    expect(first!.value.bulletin.counts.yes.vote).toBe(2);
    // The same after-commit bulletin for every vote of the batch on the item: computed once.
    expect(second!.value.bulletin).toBe(first!.value.bulletin);
    expect(again!.value.bulletin).toBe(first!.value.bulletin);
    expect((await store.plain(voting.statements(item))).map((s) => s.voter).sort()).toEqual([a.nodeId, b.nodeId].sort());
    // One outer transaction and one savepoint per vote (each counted).
    expect(transactions).toBe(1 + 4);
  });

  it('counts a request as in flight until its answer is written: votes arriving while one waits for the disk share a transaction', async () => {
    const waiting = new EventEmitter();
    // Its handler is done, its answer not yet written (decision 0480: answers wait for the WAL sync).
    await ingest.request(waiting, () => ingest.submit(vote(a)));
    expect(transactions).toBe(1);
    const later = [vote(b), vote(generateNodeKey())].map((v) => ingest.request(new EventEmitter(), () => ingest.submit(v)));
    await Promise.all(later);
    expect(transactions).toBe(1 + 1 + 2);
    waiting.emit('close');
    // Alone again: stored at once, in a transaction of its own.
    const alone = new EventEmitter();
    await ingest.request(alone, () => ingest.submit(vote(generateNodeKey())));
    expect(transactions).toBe(1 + 1 + 2 + 1);
  });

  it('holds a batch while a signature is still being checked: that vote joins it (issue 30: fewer transactions and syncs per vote)', async () => {
    // Another request in flight, so signatures are checked on the thread pool, as with concurrent clients.
    const otherAnswer = new EventEmitter();
    const other = ingest.request(otherAnswer, () => Promise.resolve());
    await other;
    const second = vote(b);
    let secondAnswer: Promise<unknown> = Promise.resolve();
    const first = ingest.request(new EventEmitter(), async () => {
      expect(await ingest.verify(vote(a), { registered: false })).toBe(true);
      const stored = ingest.submit(vote(a));
      // The second vote's check starts after the first joined the queue, before its batch is stored.
      secondAnswer = ingest.request(new EventEmitter(), async () => ((await ingest.verify(second, { registered: false })) ? ingest.submit(second) : null));
      return stored;
    });
    await first;
    await secondAnswer;
    otherAnswer.emit('close');
    expect((await store.plain(voting.statements(item))).map((s) => s.voter).sort()).toEqual([a.nodeId, b.nodeId].sort());
    // One outer transaction, a savepoint per vote: the first vote waited for the second's check.
    expect(transactions).toBe(1 + 2);
  });

  it('keeps a stored item or registered voter as seen (neither is ever deleted), and reads a missing one again', async () => {
    const other = 'ab'.repeat(32);
    let lookups = 0;
    const exists = store.plainData.items.exists.bind(store.plainData.items);
    store.plainData.items.exists = (id: string) => {
      lookups++;
      return exists(id);
    };
    expect([await ingest.itemStored(item), await ingest.itemStored(item)]).toEqual([true, true]);
    expect(lookups).toBe(1);
    expect(await ingest.itemStored(other)).toBe(false);
    store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 'u', ?, 0)").run(other, a.nodeId);
    expect(await ingest.itemStored(other)).toBe(true);
    expect(lookups).toBe(3);
    expect(await ingest.voterRegistered(b.nodeId)).toBe(false);
  });

  it('stores a vote alone at once, in its own transaction (no savepoint)', async () => {
    await expect(ingest.submit(vote(b))).resolves.toMatchObject({ stored: true });
    expect(transactions).toBe(1);
  });

  it('rejects a vote alone that fails, and keeps none of its writes', async () => {
    // An item the store does not hold: the insert fails its foreign key.
    await expect(ingest.submit(vote(b, 'ab'.repeat(32)))).rejects.toThrow(/FOREIGN KEY/);
    expect(store.db.prepare('SELECT count(*) AS n FROM events').get()).toEqual({ n: 0 });
    expect(await store.plain(voting.statements('ab'.repeat(32)))).toEqual([]);
  });
});
