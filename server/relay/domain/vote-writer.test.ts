import { createClock } from '@sinonjs/fake-timers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { type NodeKey, generateNodeKey } from '../../../core/relay/node-id.js';
import { type Vote, signVote } from '../../../core/relay/vote.js';
import { RelayStore } from '../relay-store.js';
import { tempDataDir } from '../../../test/support/relay-test-kit.js';
import { VoteWriter, VoteWriterStopped } from './vote-writer.js';
import { Voting } from './voting.js';
import type { VoteAnswer } from './vote-writer-protocol.js';

/**
 * The vote writer thread (decision 0921) on SQLite: votes sent as their body's bytes, stored there
 * and answered here as status and text, the event loop's caches told and its syncs kept, and a
 * thread that dies or hangs ends every wait on it with the reason and is replaced.
 */
const fake = createClock(Date.UTC(2026, 10, 25, 12));
const clock = clockFromFakeTimers(fake);
const item = 'cd'.repeat(32);
const relayKey = generateNodeKey();
const voters = Array.from({ length: 6 }, () => generateNodeKey());
let data: ReturnType<typeof tempDataDir>;
let store: RelayStore;
let writer: VoteWriter;
let logged: string[];
let changed: string[][];
let syncs: number;

function vote(key: NodeKey, options: { sliceHash?: string } = {}): Vote {
  const slice = options.sliceHash === undefined ? { slice: { t: 1, v: [relayKey.nodeId], i: [] } } : { slice_hash: options.sliceHash };
  return signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: key.nodeId, value: 'yes', phase: 'vote', ...slice, created_at: 1 }, key.secretKey);
}

const bytes = (document: unknown) => Buffer.from(typeof document === 'string' ? document : JSON.stringify(document));
const post = (document: unknown) => writer.post(item, bytes(document), clock.nowMs());

/** The answer's status and parsed text, or its refusal's catalog code (or the error kind). */
function read(answer: VoteAnswer): { status: number; body: Record<string, unknown> } | { refused: string } {
  if ('text' in answer) return { status: answer.status, body: JSON.parse(answer.text) as Record<string, unknown> };
  if ('unparsable' in answer) return { refused: 'unparsable' };
  return { refused: answer.error.kind === 'refusal' ? answer.error.code : answer.error.kind };
}

function openWriter(options: { entry?: URL; answerWithinMs?: number } = {}): VoteWriter {
  return new VoteWriter({
    clock,
    database: { dataDir: data.dir, commitNotices: store.commitNotices as Int32Array },
    selfSecretKey: relayKey.secretKey,
    defaultSliceFrom: { operators: [], configuredPeers: [] },
    onChanged: (itemIds) => changed.push([...itemIds]),
    log: (message) => logged.push(message),
    ...options,
  });
}

beforeEach(async () => {
  data = tempDataDir('vote-writer-');
  syncs = 0;
  store = new RelayStore(data.dir, undefined, {
    wal: {
      syncFile: () => {
        syncs++;
        return Promise.resolve();
      },
    },
  });
  store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 't', ?, 0)").run(item, relayKey.nodeId);
  const nodes = store.data.nodes;
  await store.tx(function* () {
    for (const [k, key] of voters.entries()) yield* nodes.insert({ nodeId: key.nodeId, local: true, name: `voter ${k}`, registration: '{}', nowMs: 0 });
  });
  logged = [];
  changed = [];
  writer = openWriter();
});
afterEach(async () => {
  await writer.close();
  await store.close();
  data.remove();
});

describe('VoteWriter (POST /items/{id}/vote from its bytes on a thread of its own)', () => {
  it('stores concurrent votes in one group commit there, answers them in one message with the item changed, and refuses as the route did', { timeout: 60_000 }, async () => {
    const answers = await Promise.all(voters.slice(0, 4).map((key) => post(vote(key))));
    expect(answers.map(read)).toEqual(voters.slice(0, 4).map((key) => ({ status: 201, body: expect.objectContaining({ item, voter: key.nodeId, stored: true, duplicate: false }) })));
    // Fewer commits than votes, and fewer messages than answers: the thread batched the votes that came together.
    expect(writer.commits).toBeGreaterThan(0);
    expect(writer.commits).toBeLessThan(4);
    expect(changed.length).toBeLessThan(4);
    expect(changed.flat().every((id) => id === item)).toBe(true);
    expect(read(await post(vote(voters[0] as NodeKey)))).toMatchObject({ status: 200, body: { stored: false, duplicate: true } });
    const stranger = generateNodeKey();
    expect(read(await post({ ...vote(voters[4] as NodeKey), value: 'no' }))).toEqual({ refused: 'invalid_input' });
    expect(read(await post(vote(stranger)))).toEqual({ refused: 'signer_not_registered' });
    expect(read(await post(vote(voters[5] as NodeKey, { sliceHash: 'ab'.repeat(32) })))).toEqual({ refused: 'invalid_input' });
    expect(read(await writer.post('ab'.repeat(32), bytes(vote(voters[5] as NodeKey)), clock.nowMs()))).toEqual({ refused: 'item_not_found' });
    expect(read(await post('{"schema": '))).toEqual({ refused: 'unparsable' });
    expect(read(await post('{"schema": "x\\u0000"}'))).toEqual({ refused: 'invalid_input' });
    // The event loop's store sees the thread's rows, and its answers wait for a sync after them (decision 0480).
    expect(store.db.prepare('SELECT count(*) AS n FROM votes WHERE item_id = ?').get(item)).toEqual({ n: 4 });
    const syncsBefore = syncs;
    await store.whenDurable();
    expect(syncs).toBeGreaterThan(syncsBefore);
  });

  it("drops the thread's caches when the event loop committed, read under the writer lock", { timeout: 60_000 }, async () => {
    const counted = (answer: VoteAnswer) => {
      const body = (read(answer) as unknown as { body: { relay_bulletin: { counts: { yes?: { vote?: number } } } } }).body;
      return body.relay_bulletin.counts.yes?.vote;
    };
    expect(counted(await post(vote(voters[0] as NodeKey)))).toBe(1);
    // The event loop stores a statement on the item through its own connection, as peer ingest does.
    const loopVoting = new Voting({ store, clock, selfKey: relayKey });
    await store.tx(loopVoting.storeVote(vote(voters[1] as NodeKey), null, clock.nowMs()));
    // The thread's cached statements of the item are stale now: its next tally must count all three.
    expect(counted(await post(vote(voters[2] as NodeKey)))).toBe(3);
  });

  it('keeps seq order equal to commit order while the thread and the event loop write at once', { timeout: 60_000 }, async () => {
    const seen: number[] = [];
    let since = 0;
    let reads = Promise.resolve();
    // One read at a time, each from where the last stopped, as a peer pages GET /events.
    const readAfterCommit = () =>
      (reads = reads.then(async () => {
        for (const event of await store.plainData.events.after(since, [], 500)) {
          seen.push(event.seq);
          since = event.seq;
        }
      }));
    const votes = voters.map((key) => post(vote(key)).then(readAfterCommit));
    const own = [1, 2, 3, 4].map((n) => store.tx(store.appendEvent('node', relayKey.nodeId, n.toString(16).padStart(64, '0'), {}, n)).then(readAfterCommit));
    await Promise.all([...votes, ...own]);
    await readAfterCommit();
    const all = (await store.plainData.events.after(0, [], 500)).map((e) => e.seq);
    // A reader paging by seq after every commit saw every event once: no smaller seq committed after a larger one.
    expect(seen).toEqual(all);
    expect(all.length).toBeGreaterThanOrEqual(voters.length + 4);
  });

  it('rejects the votes waiting on a thread that crashes with the reason, logs it, and starts a new thread for the next vote', { timeout: 60_000 }, async () => {
    await post(vote(voters[0] as NodeKey));
    const waiting = post(vote(voters[1] as NodeKey));
    writer.crashForTest();
    await expect(waiting).rejects.toThrow(VoteWriterStopped);
    await expect(waiting).rejects.toThrow(/the vote writer thread was ended by a test/);
    expect(logged.some((line) => /vote writer thread was ended by a test; 1 vote\(s\) waiting on it fail, and the next vote starts a new thread/.test(line))).toBe(true);
    expect(writer.running).toBe(false);
    // Sent again (votes are idempotent): stored by a new thread, or found stored already.
    expect(read(await post(vote(voters[1] as NodeKey)))).toMatchObject({ body: { item } });
    expect(writer.running).toBe(true);
  });

  it('fails the votes waiting on a thread that throws uncaught with its error, and starts a new one for the next vote', { timeout: 60_000 }, async () => {
    await writer.close();
    writer = openWriter({ entry: new URL('./crashing-vote-writer-thread.ts', import.meta.url) });
    await expect(post(vote(voters[0] as NodeKey))).rejects.toThrow(/the vote writer thread failed: a crash in the vote writer thread \(a test\)/);
    expect(logged.some((line) => /1 vote\(s\) waiting on it fail, and the next vote starts a new thread/.test(line))).toBe(true);
    expect(writer.running).toBe(false);
    await expect(post(vote(voters[0] as NodeKey))).rejects.toThrow(VoteWriterStopped);
  });

  it('ends a thread that stays silent while votes wait, after answerWithinMs on the injected clock, with a failure that says so', { timeout: 60_000 }, async () => {
    await writer.close();
    writer = openWriter({ entry: new URL('./silent-vote-writer-thread.ts', import.meta.url), answerWithinMs: 5_000 });
    const waiting = post(vote(voters[0] as NodeKey));
    waiting.catch(() => undefined);
    // The silent thread says `ready` (heard: the watchdog looks again), then nothing.
    await writer.whenThreadReady();
    fake.tick(5_000);
    fake.tick(4_999);
    expect(writer.running).toBe(true);
    fake.tick(1);
    await expect(waiting).rejects.toThrow(/the vote writer thread answered nothing for 5000 ms while 1 vote\(s\) of this relay waited; it was taken for hung and ended/);
    expect(writer.running).toBe(false);
  });
});
