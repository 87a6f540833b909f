import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GrowingMaxQuorum } from '../../core/relay/growing-quorum.js';
import { GrowingTally } from '../../core/relay/growing-tally.js';
import { type QuorumSet, maxQuorum } from '../../core/relay/quorum-set.js';
import { tally } from '../../core/relay/tally.js';
import type { Vote } from '../../core/relay/vote.js';
import { ITEM, nodeName, quorumSetFrom, statementsArb, topologyArb } from './relay-arbitraries.js';

/**
 * A voter's slice weakened in place (`relax`, hostile19): a voter whose statements declare a further
 * slice counts with "any of them" (`{t: 1, i: [old, new]}`), and the growing quorum and tally follow
 * it instead of being built again. Checked against the references (`maxQuorum`, `tally`) with the
 * slices as they are now, after every join, statement and relaxation, on random networks. Pairs
 * weakened to name each other make out members come back into the quorum by a relaxation (about
 * 130 times in 1000 runs; random further slices alone rarely do). `relax` promises any weaker
 * slice, so some weakenings are flat ones too (fewer members, a threshold lowered to match: review20
 * found the certificate of an out member kept naming a member its new flat slice had dropped).
 */
type Step = { kind: 'join'; node: string } | { kind: 'relax'; node: string; weakening: Weakening } | { kind: 'pair'; node: string; other: string };

/**
 * How a slice is weakened: "any of" it and `extra`, or (`flat`, when the old slice allows one) a flat
 * slice of some of its own members: the members whose bit is set in `mask` dropped, as many as the
 * threshold allows, and a threshold from `tSeed` low enough that every set satisfying the old slice
 * satisfies it.
 */
type Weakening = { extra: QuorumSet; flat?: { mask: number; tSeed: number } };

/**
 * A flat slice weaker than `old`, or undefined when `old` has too low a threshold for one. A set
 * satisfying `old` holds at least t - |i| of its members (inner sets count at most one each), so at
 * least t - |i| - d of them once d are dropped.
 */
function flatWeakening(old: QuorumSet, { mask, tSeed }: { mask: number; tSeed: number }): QuorumSet | undefined {
  const bound = old.t - old.i.length;
  if (bound < 1) return undefined;
  const v: string[] = [];
  let dropped = 0;
  old.v.forEach((m, k) => {
    if (dropped < bound - 1 && (mask >> k) & 1) dropped++;
    else v.push(m);
  });
  return { t: 1 + (tSeed % (bound - dropped)), v, i: [] };
}

/**
 * A further slice for `node` (never naming it: validateQuorumSet refuses that, self is implicit): a
 * random one, or one other node alone, which often brings an out member into the quorum.
 */
function extraSlice(names: readonly string[], node: string): fc.Arbitrary<QuorumSet> {
  const others = names.filter((m) => m !== node);
  return fc.oneof(quorumSetFrom(others), fc.constantFrom(...others).map((m) => ({ t: 1, v: [m], i: [] })));
}

function weakeningArb(names: readonly string[], node: string): fc.Arbitrary<Weakening> {
  return fc.record({ extra: extraSlice(names, node), flat: fc.option(fc.record({ mask: fc.nat(255), tSeed: fc.nat() }), { nil: undefined }) });
}

const scene = fc.integer({ min: 2, max: 8 }).chain((n) => {
  const names = Array.from({ length: n }, (_, k) => nodeName(k));
  const step: fc.Arbitrary<Step> = fc.constantFrom(...names).chain((node) =>
    fc.oneof(
      fc.constant<Step>({ kind: 'join', node }),
      weakeningArb(names, node).map<Step>((weakening) => ({ kind: 'relax', node, weakening })),
      // Two nodes each weakened to name the other alone: joined, they form a quorum of their own.
      fc.constantFrom(...names.filter((m) => m !== node)).map<Step>((other) => ({ kind: 'pair', node, other })),
    ),
  );
  return fc.record({
    topology: topologyArb(n),
    withoutSlice: fc.subarray(names, { maxLength: 1 }),
    initial: fc.subarray(names),
    steps: fc.array(step, { maxLength: 3 * n }),
    self: fc.constantFrom(...names),
    statements: statementsArb(names, 30),
    relaxAt: fc.array(fc.constantFrom(...names).chain((node) => fc.tuple(fc.nat(30), fc.constant(node), weakeningArb(names, node))), { maxLength: 8 }),
  });
});

/** Slices that can be weakened: each relaxation makes a new object (the core compiles slices by object). */
function weakenable(topology: Map<string, QuorumSet>, withoutSlice: readonly string[]) {
  const current = new Map(topology);
  for (const node of withoutSlice) current.delete(node);
  return {
    sliceOf: (node: string): QuorumSet | undefined => current.get(node),
    /** Whether the node has a slice to weaken (one without keeps none: a slice appearing is no weakening). */
    weaken(node: string, { extra, flat }: Weakening): boolean {
      const old = current.get(node);
      if (!old) return false;
      current.set(node, (flat && flatWeakening(old, flat)) ?? { t: 1, v: [], i: [old, extra] });
      return true;
    },
  };
}

describe('relax (hostile19: a voter declaring a further slice is followed in place)', () => {
  it('GrowingMaxQuorum equals maxQuorum with the slices as they are now, after every join and relaxation', () => {
    fc.assert(
      fc.property(scene, (s) => {
        const slices = weakenable(s.topology, s.withoutSlice);
        const growing = new GrowingMaxQuorum(slices.sliceOf, s.initial);
        const joined: string[] = [...s.initial];
        for (const step of s.steps) {
          if (step.kind === 'join') {
            growing.add(step.node);
            joined.push(step.node);
          } else {
            const alone = (m: string): Weakening => ({ extra: { t: 1, v: [m], i: [] } });
            const weakened: [string, Weakening][] =
              step.kind === 'relax' ? [[step.node, step.weakening]] : [[step.node, alone(step.other)], [step.other, alone(step.node)]];
            for (const [node, weakening] of weakened) {
              if (!slices.weaken(node, weakening)) continue;
              expect(growing.relax(node)).toBe(true);
              expect(growing.members()).toEqual(maxQuorum(joined, slices.sliceOf));
              expect(growing.certificateFaults()).toEqual([]);
            }
          }
          expect(growing.members()).toEqual(maxQuorum(joined, slices.sliceOf));
          expect(growing.certificateFaults()).toEqual([]);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('GrowingTally answers what tally answers with the slices as they are now, after every statement and relaxation', () => {
    fc.assert(
      fc.property(scene, (s) => {
        const slices = weakenable(s.topology, s.withoutSlice);
        const growing = new GrowingTally(s.self, ITEM, slices.sliceOf);
        const seen: Vote[] = [];
        s.statements.forEach((next, k) => {
          for (const [at, node, weakening] of s.relaxAt) {
            // Self's slice is fixed for the tally's life: relax refuses it (the relay builds again then).
            if (at !== k || node === s.self || !slices.weaken(node, weakening)) continue;
            expect(growing.relax(node)).toBe(true);
            expect(growing.bulletin()).toEqual(tally({ self: s.self, item: ITEM, statements: seen, sliceOf: slices.sliceOf, emitted: [] }));
          }
          growing.add(next);
          seen.push(next);
          expect(growing.bulletin()).toEqual(tally({ self: s.self, item: ITEM, statements: seen, sliceOf: slices.sliceOf, emitted: [] }));
        });
        expect(growing.relax(s.self)).toBe(false);
      }),
      { numRuns: 600 },
    );
  });
});
