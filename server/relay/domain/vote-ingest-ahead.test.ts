import { EventEmitter } from 'node:events';
import { createClock } from '@sinonjs/fake-timers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { type NodeKey, generateNodeKey } from '../../../core/relay/node-id.js';
import { type Vote, signVote, verifyVote } from '../../../core/relay/vote.js';
import { RelayStore } from '../relay-store.js';
import { tempDataDir } from '../../../test/support/relay-test-kit.js';
import type { AheadCheck, SignatureChecksAhead } from './signature-thread.js';
import { CHECK_AHEAD_PAUSE_MS, VoteIngest } from './vote-ingest.js';
import { Voting } from './voting.js';

const fakeTimers = createClock(Date.UTC(2026, 10, 30, 9));
const clock = clockFromFakeTimers(fakeTimers);
const item = 'cd'.repeat(32);
const [a, b, c, d] = [generateNodeKey(), generateNodeKey(), generateNodeKey(), generateNodeKey()] as [NodeKey, NodeKey, NodeKey, NodeKey];
const relayNode = generateNodeKey();
let data: ReturnType<typeof tempDataDir>;
let store: RelayStore;
let voting: Voting;
let ahead: FakeChecksAhead;
let ingest: VoteIngest;

/** A signature thread that answers as `verifyVote` does, and notes when its verdicts are read. */
class FakeChecksAhead implements SignatureChecksAhead {
  asked: Vote[] = [];
  /** Whether the store was inside a transaction at each verdict read. */
  readInTransaction: boolean[] = [];
  taking = true;
  begin(vote: Vote): AheadCheck | null {
    if (!this.taking) return null;
    this.asked.push(vote);
    return {
      verdict: () => {
        this.readInTransaction.push(store.inTransaction);
        return verifyVote(vote, { keyChecked: true });
      },
    };
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

function vote(key: NodeKey, phase: 'vote' | 'accept' = 'vote', onItem = item): Vote {
  return signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item: onItem, voter: key.nodeId, value: 'yes', phase, slice: { t: 1, v: [d.nodeId], i: [] }, created_at: 1 }, key.secretKey);
}

/** `vote` with another key's signature: well formed, forged. */
function forged(key: NodeKey, phase: 'vote' | 'accept' = 'vote'): Vote {
  return { ...vote(key, phase), sig: vote(b, phase).sig };
}

const count = (table: string) => (store.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;

/**
 * A lone request (nothing else in flight), as a sequential client sends it: null when it does not
 * go ahead, else its outcome, with the request closed (its answer written) once it settles.
 */
function alone(v: Vote): Promise<unknown> | null {
  const answer = new EventEmitter();
  let started: Promise<unknown> | null = null;
  ingest
    .request(answer, () => {
      started = ingest.storeCheckedAhead(v);
      return started ?? Promise.resolve();
    })
    .catch(() => {});
  if (!started) {
    answer.emit('close');
    return null;
  }
  const closed = () => answer.emit('close');
  return (started as Promise<unknown>).finally(closed);
}

beforeEach(() => {
  data = tempDataDir('vote-ingest-ahead-');
  store = new RelayStore(data.dir);
  // The relay node's slice holds a and c: a's vote alone moves its tally, so a rollback has a tally to undo.
  voting = new Voting({ store, clock, selfKey: relayNode, selfSlice: { t: 2, v: [a.nodeId, c.nodeId], i: [] } });
  ahead = new FakeChecksAhead();
  ingest = new VoteIngest(store, voting, relayNode.nodeId, () => clock.nowMs(), ahead);
  store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 't', ?, 0)").run(item, a.nodeId);
});
afterEach(() => {
  store.close();
  data.remove();
});

describe('VoteIngest: a lone vote stored while its signature is checked ahead (decision 1090)', () => {
  it('stores a genuine vote as the checked-first path does, the verdict read inside its transaction before the commit', async () => {
    const outcome = await alone(vote(a));
    expect(outcome).toMatchObject({ stored: true, duplicate: false, equivocation: false });
    expect((outcome as { bulletin: { counts: { yes: { vote: number } } } }).bulletin.counts.yes.vote).toBe(1);
    expect(ahead.asked).toHaveLength(1);
    expect(ahead.readInTransaction).toEqual([true]);
    expect(ingest.checkedAhead).toEqual({ stored: 1, forged: 0 });
    expect(count('votes')).toBe(1);
  });

  it('rolls a forged vote back whole: no row, no event, no statement, the tally as before', async () => {
    await alone(vote(c));
    const before = { votes: count('votes'), events: count('events'), bulletin: await store.plain(voting.bulletin(item, relayNode.nodeId)) };
    expect(await alone(forged(a))).toBe('forged');
    expect(ahead.readInTransaction).toEqual([true, true]);
    expect({ votes: count('votes'), events: count('events'), bulletin: await store.plain(voting.bulletin(item, relayNode.nodeId)) }).toEqual(before);
    expect((await store.plain(voting.statements(item))).map((s) => s.voter)).toEqual([c.nodeId]);
    expect(ingest.checkedAhead).toEqual({ stored: 1, forged: 1 });
  });

  it('after a forgery, checks lone votes first for CHECK_AHEAD_PAUSE_MS, then goes ahead again', async () => {
    expect(await alone(forged(a))).toBe('forged');
    // The caller checks these first, on the loop, as without a thread.
    expect(alone(vote(a))).toBeNull();
    fakeTimers.tick(CHECK_AHEAD_PAUSE_MS - 1);
    expect(alone(vote(a))).toBeNull();
    fakeTimers.tick(1);
    expect(await alone(vote(a))).toMatchObject({ stored: true });
    // What the rollback emptied is read again: the relay node's tally counts what is stored.
    expect(await alone(vote(c))).toMatchObject({ stored: true });
    expect((await store.plain(voting.bulletin(item, relayNode.nodeId))).counts.yes.vote).toBe(2);
    expect(ahead.asked).toHaveLength(3);
  });

  it('does not go ahead while another vote request is in flight, nor when the thread does not take the vote', async () => {
    const other = new EventEmitter();
    await ingest.request(other, () => Promise.resolve());
    expect(alone(vote(a))).toBeNull();
    other.emit('close');
    ahead.taking = false;
    expect(alone(vote(a))).toBeNull();
    expect(ahead.asked).toHaveLength(0);
    expect(count('votes')).toBe(0);
  });

  it('passes on a genuine vote\'s failure as it is, and answers a forged one\'s failure as its signature', async () => {
    // An item the store does not hold: the insert fails its foreign key.
    const other = 'ab'.repeat(32);
    const genuine = alone(vote(a, 'vote', other));
    await expect(genuine).rejects.toThrow(/FOREIGN KEY/);
    const forgedElsewhere = { ...vote(a, 'vote', other), sig: vote(b, 'vote', other).sig };
    expect(await alone(forgedElsewhere)).toBe('forged');
    expect(count('events')).toBe(0);
  });
});
