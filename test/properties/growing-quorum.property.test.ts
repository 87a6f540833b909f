import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { blockingSet } from '../../core/relay/compiled-slice.js';
import { GrowingMaxQuorum } from '../../core/relay/growing-quorum.js';
import { maxQuorum } from '../../core/relay/quorum-set.js';
import { nodeName, topologyArb } from './relay-arbitraries.js';

/** A topology of 2..9 nodes (some without a slice), and an order in which nodes join, repeats allowed. */
const scene = fc.integer({ min: 2, max: 9 }).chain((n) => {
  const names = Array.from({ length: n }, (_, k) => nodeName(k));
  return fc.record({
    topology: topologyArb(n),
    withoutSlice: fc.subarray(names, { maxLength: 2 }),
    joins: fc.array(fc.constantFrom(...names, 'stranger'), { maxLength: 2 * n }),
    initial: fc.subarray(names),
  });
});

describe('GrowingMaxQuorum (issue 18: maxQuorum kept up to date as nodes join)', () => {
  it('equals maxQuorum of the nodes so far after every join, from any starting set', () => {
    fc.assert(
      fc.property(scene, (s) => {
        const sliceOf = (node: string) => (s.withoutSlice.includes(node) ? undefined : s.topology.get(node));
        const growing = new GrowingMaxQuorum(sliceOf, s.initial);
        const joined = [...s.initial];
        expect(growing.members()).toEqual(maxQuorum(joined, sliceOf));
        expect(growing.certificateFaults()).toEqual([]);
        for (const node of s.joins) {
          growing.add(node);
          joined.push(node);
          const expected = maxQuorum(joined, sliceOf);
          expect(growing.members()).toEqual(expected);
          expect(growing.certificateFaults()).toEqual([]);
          expect(growing.size).toBe(expected.size);
          for (const name of new Set(joined)) expect(growing.has(name)).toBe(expected.has(name));
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('keeps its certificates sound on rings joined in ring order, backwards or shuffled (the shape of the bench, where most joins settle outside the set)', () => {
    const ringScene = fc.integer({ min: 3, max: 40 }).chain((n) =>
      fc.record({
        n: fc.constant(n),
        width: fc.integer({ min: 1, max: Math.min(n - 1, 8) }),
        thresholdShare: fc.double({ min: 0, max: 1, noNaN: true }),
        start: fc.integer({ min: 0, max: n - 1 }),
        order: fc.constantFrom('forward', 'backward', 'shuffled'),
        shuffled: fc.shuffledSubarray(Array.from({ length: n }, (_, k) => k), { minLength: n, maxLength: n }),
      }),
    );
    fc.assert(
      fc.property(ringScene, ({ n, width, thresholdShare, start, order, shuffled }) => {
        const names = Array.from({ length: n }, (_, k) => nodeName(k));
        const t = 1 + Math.min(width - 1, Math.floor(thresholdShare * width));
        const ring = new Map(names.map((name, k) => [name, { t, v: Array.from({ length: width }, (_, j) => names[(k + 1 + j) % n] as string), i: [] }]));
        const sliceOf = (node: string) => ring.get(node);
        const sequence =
          order === 'shuffled' ? shuffled : Array.from({ length: n }, (_, k) => (order === 'forward' ? start + k : start + n - k) % n);
        const growing = new GrowingMaxQuorum(sliceOf);
        const joined: string[] = [];
        for (const k of sequence) {
          growing.add(names[k] as string);
          joined.push(names[k] as string);
          expect(growing.members()).toEqual(maxQuorum(joined, sliceOf));
          expect(growing.certificateFaults()).toEqual([]);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('agrees with maxQuorum on a ring of 300 nodes joining in order, where each join reshapes a long chain of exclusions', () => {
    const n = 300;
    const names = Array.from({ length: n }, (_, k) => nodeName(k));
    const ring = new Map(names.map((name, k) => [name, { t: 14, v: Array.from({ length: 20 }, (_, j) => names[(k + 1 + j) % n] as string), i: [] }]));
    const growing = new GrowingMaxQuorum((node) => ring.get(node));
    for (let k = 0; k < n; k++) {
      growing.add(names[k] as string);
      if (k % 7 === 0 || k > n - 30) {
        expect(growing.members()).toEqual(maxQuorum(names.slice(0, k + 1), (node) => ring.get(node)));
        expect(growing.certificateFaults()).toEqual([]);
      }
    }
    expect(growing.size).toBe(n);
  });

  it('blockingSet of a flat slice picks what the sort-based search picks', () => {
    const flat = fc.integer({ min: 1, max: 12 }).chain((n) =>
      fc.record({
        t: fc.integer({ min: 1, max: n }),
        // Per validator: unusable, or a rank among few values (ties are the point), -Infinity included.
        ranks: fc.array(fc.option(fc.constantFrom(-Infinity, 1, 2, 3, 2.5), { nil: undefined }), { minLength: n, maxLength: n }),
      }),
    );
    fc.assert(
      fc.property(flat, ({ t, ranks }) => {
        const v = ranks.map((_, k) => 10 + k);
        const slice = { t, v, i: [], members: v };
        const rankOf = (id: number) => ranks[id - 10];
        const usable = v.filter((id) => rankOf(id) !== undefined);
        const need = v.length - t + 1;
        // Exactly enough: all of them, in slice order; more: the lowest ranks (Array#sort is stable).
        const expected =
          usable.length < need ? undefined : usable.length === need ? usable : [...usable].sort((a, b) => (rankOf(a) as number) - (rankOf(b) as number)).slice(0, need);
        const found = blockingSet(slice, rankOf);
        expect(found?.nodes).toEqual(expected);
        if (found && expected) expect(found.rank).toBe(Math.max(...expected.map((id) => rankOf(id) as number)));
      }),
      { numRuns: 500 },
    );
  });
});
