import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GrowingMaxQuorum, maxQuorum } from '../../core/relay/index.js';
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
        for (const node of s.joins) {
          growing.add(node);
          joined.push(node);
          const expected = maxQuorum(joined, sliceOf);
          expect(growing.members()).toEqual(expected);
          expect(growing.size).toBe(expected.size);
          for (const name of new Set(joined)) expect(growing.has(name)).toBe(expected.has(name));
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('agrees with maxQuorum on a ring of 300 nodes joining in order, where each join reshapes a long chain of exclusions', () => {
    const n = 300;
    const names = Array.from({ length: n }, (_, k) => nodeName(k));
    const ring = new Map(names.map((name, k) => [name, { t: 14, v: Array.from({ length: 20 }, (_, j) => names[(k + 1 + j) % n] as string), i: [] }]));
    const growing = new GrowingMaxQuorum((node) => ring.get(node));
    for (let k = 0; k < n; k++) {
      growing.add(names[k] as string);
      if (k % 7 === 0 || k > n - 30) expect(growing.members()).toEqual(maxQuorum(names.slice(0, k + 1), (node) => ring.get(node)));
    }
    expect(growing.size).toBe(n);
  });
});
