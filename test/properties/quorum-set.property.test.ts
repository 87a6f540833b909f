import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { blocks, maxQuorum, normalizeQuorumSet, quorumSetHash, quorumSetMembers, sat } from '../../core/relay/quorum-set.js';
import { allQuorums, isQuorum, nodeName, quorumSetFrom, subsets, topologyArb } from './relay-arbitraries.js';

// Pure set arithmetic on <= 8 nodes: cheap, so many runs.
const NUM_RUNS = 300;
const pool = Array.from({ length: 8 }, (_, k) => nodeName(k));
const nodeSet = fc.subarray(pool).map((s) => new Set(s));

describe('quorum sets (design note scp-s5, property 1)', () => {
  it('1. blocks(Q, B) == !sat(Q, members \\ B)', () => {
    fc.assert(
      fc.property(quorumSetFrom(pool, 4), nodeSet, (q, b) => {
        const rest = new Set([...quorumSetMembers(q)].filter((n) => !b.has(n)));
        expect(blocks(q, b)).toBe(!sat(q, rest));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('1. sat and blocks are monotone in the node set', () => {
    fc.assert(
      fc.property(quorumSetFrom(pool, 4), nodeSet, nodeSet, (q, s, extra) => {
        const bigger = new Set([...s, ...extra]);
        if (sat(q, s)) expect(sat(q, bigger)).toBe(true);
        if (blocks(q, s)) expect(blocks(q, bigger)).toBe(true);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('normalising keeps sat and blocks for every subset, is idempotent, and fixes the hash', () => {
    fc.assert(
      fc.property(quorumSetFrom(pool.slice(0, 6), 4), (q) => {
        const n = normalizeQuorumSet(q);
        for (const s of subsets(pool.slice(0, 6))) {
          expect(sat(n, s)).toBe(sat(q, s));
          expect(blocks(n, s)).toBe(blocks(q, s));
        }
        expect(normalizeQuorumSet(n)).toEqual(n);
        const respelled = { t: q.t, v: [...q.v].reverse(), i: [...q.i].reverse() };
        expect(quorumSetHash(respelled)).toBe(quorumSetHash(q));
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

describe('maxQuorum (property 2, brute-force oracle, n <= 6)', () => {
  it('2. is a quorum (or empty) and contains every quorum inside S', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 6 }).chain((n) => fc.tuple(topologyArb(n), fc.subarray(Array.from({ length: n + 1 }, (_, k) => nodeName(k))))),
        ([topology, s]) => {
          // nodeName(n) has no slice: an unknown node must be dropped.
          const sliceOf = (node: string) => topology.get(node);
          const result = maxQuorum(s, sliceOf);
          expect([...result].every((m) => s.includes(m))).toBe(true);
          if (result.size > 0) expect(isQuorum(result, sliceOf)).toBe(true);
          for (const quorum of allQuorums(s, sliceOf)) {
            for (const member of quorum) expect(result.has(member)).toBe(true);
          }
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });
});
