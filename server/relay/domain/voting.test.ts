import { createClock } from '@sinonjs/fake-timers';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import { type NodeKey, generateNodeKey } from '../../../core/relay/node-id.js';
import { type QuorumSet, quorumSetHash } from '../../../core/relay/quorum-set.js';
import { type Vote, signVote } from '../../../core/relay/vote.js';
import { signSliceDeclaration } from '../../../core/relay/slice-declaration.js';
import { RelayStore } from '../relay-store.js';
import { tempDataDir } from '../../../test/support/relay-test-kit.js';
import { Voting } from './voting.js';

const clock = clockFromFakeTimers(createClock(Date.UTC(2026, 10, 20, 12)));
const item = 'cd'.repeat(32);
let data: ReturnType<typeof tempDataDir>;
let store: RelayStore;
let voting: Voting;
const [h1, h2, x] = [generateNodeKey(), generateNodeKey(), generateNodeKey()] as [NodeKey, NodeKey, NodeKey];

function vote(key: NodeKey, phase: 'vote' | 'accept', slice: QuorumSet): Vote {
  return signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: key.nodeId, value: 'yes', phase, slice, created_at: Math.floor(clock.nowMs() / 1000) }, key.secretKey);
}

beforeEach(async () => {
  data = tempDataDir('voting-');
  store = new RelayStore(data.dir);
  voting = new Voting({ store, clock, selfKey: generateNodeKey() });
  store.db.prepare("INSERT INTO items (item_id, type, kind, title, author, created_ms) VALUES (?, 'claim', 'statement', 't', ?, 0)").run(item, h1.nodeId);
  // h1 voted and accepted yes; h2 said nothing. x never votes: its bulletin follows its published slice.
  store.tx(function* () {
    yield* voting.storeVote(vote(h1, 'vote', { t: 1, v: [h2.nodeId], i: [] }), null, 0);
    yield* voting.storeVote(vote(h1, 'accept', { t: 1, v: [h2.nodeId], i: [] }), null, 0);
  });
});
afterEach(() => {
  store.close();
  data.remove();
});

describe('Voting caches', () => {
  it('a slice published with setSlice is used by the very next tally (slice_hash), while the rank never goes down', async () => {
    const hashOf = (node: string) => quorumSetHash({ t: 1, v: [node], i: [] });
    await store.tx(voting.setSlice(x.nodeId, { t: 1, v: [h2.nodeId], i: [] }, false, 1));
    expect(await store.plain(voting.bulletin(item, x.nodeId))).toMatchObject({ state: 'uncommitted', value: null, slice_hash: hashOf(h2.nodeId) });
    await store.tx(voting.setSlice(x.nodeId, { t: 1, v: [h1.nodeId], i: [] }, false, 2));
    // h1 accepted yes and is all of x's slice: v-blocking.
    expect(await store.plain(voting.bulletin(item, x.nodeId))).toMatchObject({ state: 'accepted', value: 'yes', accepted_via: 'v-blocking', slice_hash: hashOf(h1.nodeId) });
    await store.tx(voting.setSlice(x.nodeId, { t: 1, v: [h2.nodeId], i: [] }, false, 3));
    // Floored at what was reported: still accepted, and x is asked to sign the accept it owes.
    expect(await store.plain(voting.bulletin(item, x.nodeId))).toMatchObject({ state: 'accepted', value: 'yes', slice_hash: hashOf(h2.nodeId), toEmit: [{ value: 'yes', phase: 'accept' }] });
  });

  it('a slice applied from a peer is used by the very next tally', async () => {
    await store.tx(voting.setSlice(x.nodeId, { t: 1, v: [h2.nodeId], i: [] }, false, 1));
    expect((await store.plain(voting.bulletin(item, x.nodeId))).state).toBe('uncommitted');
    const declaration = signSliceDeclaration({ node_id: x.nodeId, slice: { t: 1, v: [h1.nodeId], i: [] }, updated_ms: 5 }, x.secretKey);
    expect(await store.tx(voting.applyDeclaration(declaration, 'http://peer.test', 6))).toBe(true);
    expect((await store.plain(voting.bulletin(item, x.nodeId))).state).toBe('accepted');
  });

  it('a rolled back slice change is forgotten, even when read inside its transaction (its floor too)', async () => {
    await store.tx(voting.setSlice(x.nodeId, { t: 1, v: [h2.nodeId], i: [] }, false, 1));
    await expect(
      store.tx(function* () {
        yield* voting.setSlice(x.nodeId, { t: 1, v: [h1.nodeId], i: [] }, false, 2);
        expect((yield* voting.bulletin(item, x.nodeId)).state).toBe('accepted'); // fills the caches (and the floor) with the uncommitted slice
        throw new Error('abandon');
      }),
    ).rejects.toThrow('abandon');
    expect((await store.plain(voting.publishedSlice(x.nodeId)))?.qset.v).toEqual([h2.nodeId]);
    expect((await store.plain(voting.bulletin(item, x.nodeId))).state).toBe('uncommitted');
  });

  it('a new statement is in the next tally; a rolled back one is not', async () => {
    await store.tx(voting.setSlice(x.nodeId, { t: 1, v: [h2.nodeId], i: [] }, false, 1));
    expect((await store.plain(voting.bulletin(item, x.nodeId))).state).toBe('uncommitted');
    await expect(
      store.tx(function* () {
        yield* voting.storeVote(vote(h2, 'accept', { t: 1, v: [h1.nodeId], i: [] }), null, 2);
        // x's slice {h2} is v-blocked by h2; h1 and h2 name each other, so x confirms too.
        expect((yield* voting.bulletin(item, x.nodeId)).state).toBe('confirmed');
        throw new Error('abandon');
      }),
    ).rejects.toThrow('abandon');
    expect(await store.plain(voting.statements(item))).toHaveLength(2);
    expect((await store.plain(voting.bulletin(item, x.nodeId))).state).toBe('uncommitted');
    await store.tx(voting.storeVote(vote(h2, 'accept', { t: 1, v: [h1.nodeId], i: [] }), null, 3));
    expect(await store.plain(voting.bulletin(item, x.nodeId))).toMatchObject({ state: 'confirmed', counts: { yes: { accept: 2 } } });
  });

  it('reuses parsed slices and statements between lookups (what lets the core reuse their compiled form)', async () => {
    await store.tx(voting.setSlice(x.nodeId, { t: 1, v: [h1.nodeId], i: [] }, false, 1));
    expect(await store.plain(voting.publishedSlice(x.nodeId))).toBe(await store.plain(voting.publishedSlice(x.nodeId)));
    const first = await store.plain(voting.statements(item));
    expect(await store.plain(voting.statements(item))).toBe(first);
    // h1 sent the same slice in both statements: one shared object.
    expect(first[0]!.slice).toBe(first[1]!.slice);
    const hash = await store.tx(voting.rememberQuorumSet({ t: 1, v: [h2.nodeId], i: [] }));
    expect(await store.plain(voting.quorumSetByHash(hash))).toBe(await store.plain(voting.quorumSetByHash(hash)));
    // Adding a statement re-reads the list but keeps the statements already parsed.
    await store.tx(voting.storeVote(vote(h2, 'vote', { t: 1, v: [h1.nodeId], i: [] }), null, 2));
    const second = await store.plain(voting.statements(item));
    expect(second).not.toBe(first);
    expect(second).toHaveLength(3);
    expect(second[0]).toBe(first[0]);
  });

  it("an equivocation is found alike from the item's kept statements and from the database, across reads, dropped caches and rolled-back votes (property)", async () => {
    const voters = Array.from({ length: 2 }, () => generateNodeKey());
    const signed = (key: NodeKey, value: 'yes' | 'no', phase: 'vote' | 'accept') =>
      signVote({ schema: 'x.vote/1', scheme: 'scp-s5', item, voter: key.nodeId, value, phase, slice: { t: 1, v: [h1.nodeId], i: [] }, created_at: 1 }, key.secretKey);
    const step = fc.oneof(
      fc.record({ kind: fc.constant('store' as const), who: fc.integer({ min: 0, max: 1 }), value: fc.constantFrom('yes' as const, 'no' as const), phase: fc.constantFrom('vote' as const, 'accept' as const), rollBack: fc.integer({ min: 0, max: 9 }).map((n) => n < 3) }),
      fc.record({ kind: fc.constant('read' as const) }),
      fc.record({ kind: fc.constant('forget' as const) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 16 }), async (steps) => {
        store.db.prepare('DELETE FROM votes WHERE voter <> ?').run(h1.nodeId);
        // Their events too: a vote event names its statement's row (decision 1170).
        store.db.prepare('DELETE FROM events WHERE vote_value IS NOT NULL AND author <> ?').run(h1.nodeId);
        voting.forgetCached();
        const stored = new Set<string>();
        for (const s of steps) {
          if (s.kind === 'read') await store.plain(voting.statements(item));
          else if (s.kind === 'forget') voting.forgetCached();
          else {
            const v = signed(voters[s.who]!, s.value, s.phase);
            const other = `${v.voter} ${s.value === 'yes' ? 'no' : 'yes'} ${s.phase}`;
            const outcome = await store.tx(function* () {
              // A vote of the same batch (the other value: an equivocation, were it kept) that failed
              // after it stored: its savepoint takes it back, and it must not count.
              if (s.rollBack) {
                try {
                  yield* store.savepoint(function* () {
                    yield* voting.storeVote(signed(voters[s.who]!, s.value === 'yes' ? 'no' : 'yes', s.phase), null, 2);
                    throw new Error('rolled back');
                  });
                } catch {
                  // expected
                }
              }
              return yield* voting.storeVote(v, null, 2);
            });
            expect(outcome.equivocation).toBe(stored.has(other));
            stored.add(`${v.voter} ${s.value} ${s.phase}`);
          }
        }
      }),
      {
        numRuns: 100,
        // The kept statements answer (read first), also after a rolled-back vote emptied them.
        examples: [
          [[{ kind: 'read' }, { kind: 'store', who: 0, value: 'yes', phase: 'vote', rollBack: false }, { kind: 'store', who: 0, value: 'no', phase: 'vote', rollBack: false }]],
          [[{ kind: 'read' }, { kind: 'store', who: 0, value: 'yes', phase: 'vote', rollBack: true }, { kind: 'read' }, { kind: 'store', who: 0, value: 'no', phase: 'vote', rollBack: false }]],
        ],
      },
    );
  });

  it('statements added after a read keep the database order, even when stored with an earlier time (property)', async () => {
    const voters = Array.from({ length: 4 }, () => generateNodeKey());
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.constantFrom('vote' as const, 'accept' as const), fc.integer({ min: 0, max: 5 })), { maxLength: 12 }),
        async (writes) => {
          store.db.prepare('DELETE FROM votes').run();
          // A statement's other documents go with it (they never outlive it in a relay).
          store.db.prepare('DELETE FROM vote_documents').run();
          voting.forgetCached();
          await store.plain(voting.statements(item)); // the ordered list now exists and is kept up to date from here on
          for (const [who, phase, atMs] of writes) await store.tx(voting.storeVote(vote(voters[who]!, phase, { t: 1, v: [h1.nodeId], i: [] }), null, atMs));
          const incremental = await store.plain(voting.statements(item));
          const fresh = await store.plain(new Voting({ store, clock, selfKey: generateNodeKey() }).statements(item));
          expect(incremental).toEqual(fresh);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('shared objects are frozen, so no caller can change a slice under the cache', async () => {
    await store.tx(voting.setSlice(x.nodeId, { t: 1, v: [h1.nodeId], i: [] }, false, 1));
    const published = (await store.plain(voting.publishedSlice(x.nodeId)))!;
    expect(() => published.qset.v.push(h2.nodeId)).toThrow(TypeError);
    expect(Object.isFrozen((await store.plain(voting.statements(item)))[0]!.slice)).toBe(true);
  });

  it('the default relay slice is the operators and the configured peers\' relay nodes, never who registered, and stays one object while they stay the same', async () => {
    const operator = generateNodeKey();
    const configured = 'http://configured-peer.test';
    const trusting = new Voting({ store, clock, selfKey: generateNodeKey(), defaultSliceFrom: { operators: [operator.nodeId], configuredPeers: [configured] } });
    const addNode = (id: string, local: 0 | 1) => store.db.prepare("INSERT INTO nodes (node_id, local, registration, created_ms, updated_ms) VALUES (?, ?, '{}', 0, 0)").run(id, local);
    // Nothing configured: no slice at all, however many register.
    addNode(h1.nodeId, 1);
    expect(await store.plain(voting.selfSlice())).toBeUndefined();
    const a = await store.plain(trusting.selfSlice());
    expect(a).toEqual({ t: 1, v: [operator.nodeId], i: [] });
    // Registrations and peers an operator added over HTTP change nothing.
    addNode(h2.nodeId, 1);
    store.db.prepare("INSERT INTO peers (url, node_id, added_ms, added_by) VALUES ('http://requested.test', ?, 0, ?)").run(x.nodeId, operator.nodeId);
    expect(await store.plain(trusting.selfSlice())).toBe(a);
    // A configured peer counts once a probe learned its relay node.
    store.db.prepare("INSERT INTO peers (url, added_ms) VALUES (?, 0)").run(configured);
    expect(await store.plain(trusting.selfSlice())).toBe(a);
    store.db.prepare('UPDATE peers SET node_id = ? WHERE url = ?').run(h2.nodeId, configured);
    const b = await store.plain(trusting.selfSlice());
    expect(b).toEqual({ t: 2, v: [operator.nodeId, h2.nodeId].sort(), i: [] });
    store.db.prepare("UPDATE nodes SET name = 'renamed' WHERE node_id = ?").run(h2.nodeId);
    expect(await store.plain(trusting.selfSlice())).toBe(b);
    // A change rolled back after the slice was read inside its transaction is forgotten.
    await expect(
      store.tx(function* () {
        store.db.prepare('UPDATE peers SET node_id = ? WHERE url = ?').run(h1.nodeId, configured);
        expect((yield* trusting.selfSlice())?.v).toContain(h1.nodeId);
        throw new Error('abandon');
      }),
    ).rejects.toThrow('abandon');
    expect((await store.plain(trusting.selfSlice()))?.v).toEqual([operator.nodeId, h2.nodeId].sort());
  });
});
