import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Bulletin, type Emitted, type EmittedStatement, bulletinRank, tally } from '../../core/relay/tally.js';
import { type Vote, otherValue, voteValues } from '../../core/relay/vote.js';
import { blocks, quorumSetMembers, sat, sliceClosure } from '../../core/relay/quorum-set.js';
import { ITEM, allQuorums, nodeName, statement, statementsArb, topologyArb } from './relay-arbitraries.js';

// Each run is one or two tallies over <= 7 nodes and <= 30 statements: a few hundred runs cost ~1 s.
const NUM_RUNS = 300;

const emittedArb: fc.Arbitrary<EmittedStatement[]> = fc.subarray([
  { value: 'yes', phase: 'accept' },
  { value: 'no', phase: 'accept' },
  { value: 'yes', phase: 'confirm' },
  { value: 'no', phase: 'confirm' },
]);

/** A topology of 3..7 nodes, a self among them, statements by them. */
const scene = fc.integer({ min: 3, max: 7 }).chain((n) => {
  const names = Array.from({ length: n }, (_, k) => nodeName(k));
  return fc.record({
    topology: topologyArb(n),
    self: fc.constantFrom(...names),
    statements: statementsArb(names, 30),
    more: statementsArb(names, 10),
    emitted: emittedArb,
  });
});

const run = (s: { topology: Map<string, unknown>; self: string }, statements: readonly Vote[], emitted: Emitted) =>
  tally({
    self: s.self,
    item: ITEM,
    statements,
    sliceOf: (node) => (s.topology as Map<string, never>).get(node),
    emitted,
  });

const decision = (b: Bulletin) => ({ state: b.state, value: b.value, accepted_via: b.accepted_via, toEmit: b.toEmit });

describe('tally (design note scp-s5, properties 3-6 and 12)', () => {
  it('3. shuffled or duplicated statements give the same tally', () => {
    fc.assert(
      fc.property(
        scene.chain((s) => fc.tuple(fc.constant(s), fc.shuffledSubarray(s.statements, { minLength: s.statements.length }))),
        ([s, shuffled]) => {
          const once = run(s, s.statements, s.emitted);
          expect(run(s, shuffled, s.emitted)).toEqual(once);
          expect(run(s, [...shuffled, ...s.statements], s.emitted)).toEqual(once);
          // Statements about another item change nothing either.
          const elsewhere = s.more.map((v) => ({ ...v, item: 'cd'.repeat(32) }));
          expect(run(s, [...s.statements, ...elsewhere], s.emitted)).toEqual(once);
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  it('4. adding statements (or emitting what the tally asks) never lowers the rank', () => {
    fc.assert(
      fc.property(scene, (s) => {
        const before = run(s, s.statements, s.emitted);
        const after = run(s, [...s.statements, ...s.more], s.emitted);
        expect(bulletinRank[after.state]).toBeGreaterThanOrEqual(bulletinRank[before.state]);
        const emittedMore = run(s, s.statements, [...s.emitted, ...before.toEmit]);
        expect(bulletinRank[emittedMore.state]).toBeGreaterThanOrEqual(bulletinRank[before.state]);
        // Once conflicted, always conflicted; once a value is accepted it only changes to conflicted.
        if (before.state === 'conflicted') expect(after.state).toBe('conflicted');
        if (bulletinRank[before.state] >= bulletinRank.accepted && after.state !== 'conflicted') {
          expect(after.value).toBe(before.value);
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('5. a v-blocking set of accept p makes v accept p, whatever v voted', () => {
    fc.assert(
      fc.property(
        scene.chain((s) =>
          fc.record({
            s: fc.constant(s),
            p: fc.constantFrom(...voteValues),
            ownVote: fc.constantFrom(...voteValues),
            // Candidate accepters: everyone but self, in a random order; take the shortest blocking prefix.
            order: fc.shuffledSubarray([...s.topology.keys()].filter((n) => n !== s.self), { minLength: s.topology.size - 1 }),
            phases: fc.array(fc.constantFrom<'accept' | 'confirm'>('accept', 'confirm'), { minLength: 7, maxLength: 7 }),
          }),
        ),
        ({ s, p, ownVote, order, phases }) => {
          const slice = s.topology.get(s.self);
          if (!slice) return;
          const blocking = new Set<string>();
          for (const n of order) {
            if (blocks(slice, blocking)) break;
            blocking.add(n);
          }
          if (!blocks(slice, blocking)) return;
          // Only statements for p besides self's own vote: nothing can make v accept the other value.
          const statements = [
            statement(s.self, ownVote, 'vote'),
            ...[...blocking].map((n, k) => statement(n, p, phases[k] ?? 'accept')),
            ...s.more.filter((v) => v.value === p && v.voter !== s.self),
          ];
          const b = run(s, statements, []);
          expect(['accepted', 'confirmed']).toContain(b.state);
          expect(b.value).toBe(p);
          expect(b.toEmit[0]).toEqual({ value: p, phase: 'accept' });
          // With random extra statements for both values the only other outcome is conflicted.
          const noisy = run(s, [...statements, ...s.statements.filter((v) => v.voter !== s.self)], []);
          expect(noisy.state === 'conflicted' || noisy.value === p).toBe(true);
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  it('6. confirmed implies accepted; accepting through a quorum needs v\'s own vote', () => {
    fc.assert(
      fc.property(scene, (s) => {
        const b = run(s, s.statements, s.emitted);
        const own = (p: string) =>
          s.statements.some((v) => v.voter === s.self && v.value === p) || s.emitted.some((e) => e.value === p);
        if (b.state === 'confirmed') {
          // Confirmed p means accepted p: a rule accepts it now, or self already signed accept/confirm p.
          const p = b.value as string;
          const ownAccept =
            s.emitted.some((e) => e.value === p) ||
            s.statements.some((v) => v.voter === s.self && v.value === p && v.phase !== 'vote');
          expect(b.accepted_via !== null || ownAccept).toBe(true);
        }
        if (b.accepted_via === 'quorum') expect(own(b.value as string)).toBe(true);
        // Strip every own statement: no quorum acceptance can remain.
        const stripped = run(s, s.statements.filter((v) => v.voter !== s.self), []);
        expect(stripped.accepted_via).not.toBe('quorum');
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('12. statements of nodes outside v\'s transitive slice closure never change v\'s tally', () => {
    fc.assert(
      fc.property(scene, (s) => {
        const sliceOf = (node: string) => s.topology.get(node);
        const closure = sliceClosure(s.self, sliceOf);
        const inside = s.statements.filter((v) => closure.has(v.voter));
        // Outsiders: nodes of the topology outside the closure, and strangers with no slice at all.
        const outside = [
          ...s.statements.filter((v) => !closure.has(v.voter)),
          ...s.more.map((v) => ({ ...v, voter: `stranger-${v.voter}` })),
        ];
        expect(decision(run(s, [...inside, ...outside], s.emitted))).toEqual(decision(run(s, inside, s.emitted)));
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

describe('tally invariants', () => {
  it('never asks to emit accept for both values, nor anything once conflicted', () => {
    fc.assert(
      fc.property(scene, (s) => {
        const b = run(s, s.statements, s.emitted);
        const accepts = new Set([...s.emitted.map((e) => e.value), ...b.toEmit.map((e) => e.value)]);
        if (b.state !== 'conflicted') expect(accepts.size).toBeLessThanOrEqual(1);
        else expect(b.toEmit).toEqual([]);
        for (const e of b.toEmit) expect(e.value).toBe(b.value);
        // An accepted value is never the opposite of what self already emitted.
        if (b.value !== null && b.state !== 'voted') {
          expect(s.emitted.some((e) => e.value === otherValue(b.value as 'yes' | 'no'))).toBe(false);
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

describe('tally against a brute-force reading of the design note (n <= 7)', () => {
  it('accepts and confirms exactly when quorums found by enumeration say so', () => {
    const seen = { conflicted: 0, open: 0, accepted: 0, confirmed: 0 };
    fc.assert(
      fc.property(scene, (s) => {
        const sliceOf = (node: string) => s.topology.get(node);
        const slice = sliceOf(s.self);
        if (!slice) return;
        const b = run(s, s.statements, []);
        const said = (p: string, phases: readonly string[]) =>
          new Set(s.statements.filter((v) => v.value === p && phases.includes(v.phase)).map((v) => v.voter));
        const hasQuorumWithSelf = (within: Set<string>) =>
          allQuorums([...new Set([...within, s.self])], sliceOf).some((q) => q.has(s.self));
        const byQuorum = (p: string) => said(p, ['vote', 'accept', 'confirm']).has(s.self) && hasQuorumWithSelf(said(p, ['vote', 'accept', 'confirm']));
        // v-blocking by its definition: no set avoiding the accepters satisfies self's slice.
        const members = quorumSetMembers(slice);
        const byBlocking = (p: string) => {
          const accepters = said(p, ['accept', 'confirm']);
          return !sat(slice, new Set([...members].filter((m) => !accepters.has(m))));
        };
        const acceptable = voteValues.filter((p) => byQuorum(p) || byBlocking(p));
        const ownBoth = voteValues.every((p) => said(p, ['vote']).has(s.self)) || voteValues.every((p) => said(p, ['accept', 'confirm']).has(s.self));
        const ownAccept = voteValues.find((p) => said(p, ['accept', 'confirm']).has(s.self));
        if (ownBoth || acceptable.length === 2 || (ownAccept !== undefined && acceptable.includes(otherValue(ownAccept)))) {
          expect(b.state).toBe('conflicted');
          seen.conflicted++;
          return;
        }
        const accepted = ownAccept ?? acceptable[0];
        if (accepted === undefined) {
          expect(['uncommitted', 'voted']).toContain(b.state);
          seen.open++;
          return;
        }
        seen[b.state === 'confirmed' ? 'confirmed' : 'accepted']++;
        expect(b.value).toBe(accepted);
        const confirmedByQuorum = hasQuorumWithSelf(new Set([...said(accepted, ['accept', 'confirm']), s.self]));
        const ownConfirm = said(accepted, ['confirm']).has(s.self);
        expect(b.state).toBe(confirmedByQuorum || ownConfirm ? 'confirmed' : 'accepted');
        expect(b.accepted_via).toBe(byQuorum(accepted) ? 'quorum' : byBlocking(accepted) ? 'v-blocking' : null);
      }),
      { numRuns: NUM_RUNS },
    );
    // Every branch of the oracle was exercised.
    for (const count of Object.values(seen)) expect(count).toBeGreaterThan(NUM_RUNS / 50);
  });
});
