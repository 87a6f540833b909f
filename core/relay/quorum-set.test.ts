import { describe, expect, it } from 'vitest';
import {
  type QuorumSet,
  blocks,
  defaultThreshold,
  maxQuorum,
  normalizeQuorumSet,
  quorumSetDepthProblem,
  quorumSetHash,
  sat,
  sliceClosure,
  validateQuorumSet,
} from './quorum-set.js';

const id = (n: number) => n.toString(16).padStart(64, '0');
const [a, b, c, d, e] = [1, 2, 3, 4, 5].map(id) as [string, string, string, string, string];

describe('defaultThreshold', () => {
  it('is 67 % rounded up', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 10, 100].map(defaultThreshold)).toEqual([1, 2, 3, 3, 4, 5, 5, 7, 67]);
    for (let n = 1; n <= 1000; n++) expect(defaultThreshold(n)).toBe(Math.ceil((n * 67) / 100));
    expect(() => defaultThreshold(0)).toThrow(RangeError);
  });
});

describe('sat and blocks', () => {
  const q: QuorumSet = { t: 2, v: [a], i: [{ t: 2, v: [b, c, d], i: [] }] };
  it('counts validators and inner sets against t', () => {
    expect(sat(q, new Set([a, b, c]))).toBe(true);
    expect(sat(q, new Set([a, b]))).toBe(false);
    expect(sat(q, new Set([b, c, d]))).toBe(false);
  });
  it('finds v-blocking sets', () => {
    expect(blocks(q, new Set([a]))).toBe(true);
    expect(blocks(q, new Set([b, c]))).toBe(true);
    expect(blocks(q, new Set([b]))).toBe(false);
  });
});

describe('maxQuorum', () => {
  it('drops nodes whose slice fails inside the set, transitively, and unknown nodes', () => {
    const slices = new Map<string, QuorumSet>([
      [a, { t: 1, v: [b], i: [] }],
      [b, { t: 1, v: [a], i: [] }],
      [c, { t: 1, v: [d], i: [] }],
      [d, { t: 1, v: [e], i: [] }],
    ]);
    // d needs e, which has no slice; then c loses d.
    expect(maxQuorum([a, b, c, d, e], (n) => slices.get(n))).toEqual(new Set([a, b]));
    expect(maxQuorum([a, c], (n) => slices.get(n))).toEqual(new Set());
  });
  it('computes the slice closure', () => {
    const slices = new Map<string, QuorumSet>([
      [a, { t: 1, v: [b], i: [] }],
      [b, { t: 1, v: [c], i: [] }],
      [d, { t: 1, v: [a], i: [] }],
    ]);
    expect(sliceClosure(a, (n) => slices.get(n))).toEqual(new Set([a, b, c]));
  });
});

describe('validateQuorumSet', () => {
  const typesOf = (input: unknown, options?: { self?: string }) => {
    const result = validateQuorumSet(input, options);
    return result.ok ? [] : result.problems.map((p) => [p.path.join('.'), p.code]);
  };
  it('accepts a sane nested set', () => {
    expect(validateQuorumSet({ t: 2, v: [a], i: [{ t: 1, v: [b, c], i: [] }] })).toEqual({
      ok: true,
      value: { t: 2, v: [a], i: [{ t: 1, v: [b, c], i: [] }] },
    });
  });
  it('refuses t out of range, duplicates, bad ids, self, depth, extras', () => {
    expect(typesOf({ t: 0, v: [a], i: [] })).toEqual([['t', 'threshold_range']]);
    expect(typesOf({ t: 2, v: [a], i: [] })).toEqual([['t', 'threshold_range']]);
    expect(typesOf({ t: 1.5, v: [a], i: [] })).toEqual([['t', 'not_integer']]);
    expect(typesOf({ v: [a], i: [] })).toEqual([['t', 'missing']]);
    expect(typesOf({ t: 1, v: [a], i: [{ t: 1, v: [a], i: [] }] })).toEqual([['i.0.v.0', 'node_twice']]);
    expect(typesOf({ t: 1, v: ['A'.repeat(64)], i: [] })).toEqual([['v.0', 'pattern_mismatch']]);
    expect(typesOf({ t: 1, v: [a, b], i: [] }, { self: b })).toEqual([['v.1', 'self_in_slice']]);
    expect(typesOf({ t: 1, v: [a], i: [], x: 1 })).toEqual([['x', 'extra']]);
    expect(typesOf({ t: 1, v: [], i: [] })).toEqual([['t', 'threshold_range']]);
    expect(typesOf('x')).toEqual([['', 'not_object']]);
    const deep = (levels: number): unknown =>
      levels === 1 ? { t: 1, v: [id(100 + levels)], i: [] } : { t: 1, v: [id(100 + levels)], i: [deep(levels - 1)] };
    expect(validateQuorumSet(deep(4)).ok).toBe(true);
    expect(typesOf(deep(5))).toEqual([['i.0.i.0.i.0.i', 'quorum_set_too_deep']]);
  });
  it('refuses more than 1000 nodes', () => {
    const many = Array.from({ length: 1001 }, (_, k) => id(k + 1));
    expect(typesOf({ t: 1, v: many, i: [] })).toEqual([['', 'quorum_set_size']]);
    expect(validateQuorumSet({ t: 1, v: many.slice(0, 1000), i: [] }).ok).toBe(true);
  });
});

describe('normalizeQuorumSet and quorumSetHash', () => {
  it('sorts, lifts single-entry inner sets, and hashes spellings of one set alike', () => {
    const q1: QuorumSet = { t: 2, v: [c, a], i: [{ t: 1, v: [b], i: [] }, { t: 1, v: [], i: [{ t: 1, v: [e, d], i: [] }] }] };
    const q2: QuorumSet = { t: 2, v: [a, b, c], i: [{ t: 1, v: [d, e], i: [] }] };
    expect(normalizeQuorumSet(q1)).toEqual(q2);
    expect(quorumSetHash(q1)).toBe(quorumSetHash(q2));
    expect(quorumSetHash(q1)).not.toBe(quorumSetHash({ ...q2, t: 3 }));
    expect(quorumSetHash(q2)).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('quorumSetDepthProblem (issue 9: a set nested 1 000 deep overflowed a recursive validator)', () => {
  /** `depth` levels of `{i: [...]}` around `{v: [a]}`, built without recursion. */
  function nested(depth: number): unknown {
    let q: unknown = { t: 1, v: [a] };
    for (let k = 1; k < depth; k++) q = { t: 1, i: [q] };
    return q;
  }

  it('finds, without recursing, the problem validateQuorumSet reports', () => {
    for (const depth of [5, 1000, 200_000]) {
      expect(quorumSetDepthProblem(nested(depth))).toEqual({ path: ['i', '0', 'i', '0', 'i', '0', 'i'], code: 'quorum_set_too_deep', limit: 4 });
    }
    const viaValidator = validateQuorumSet(nested(5));
    expect(viaValidator.ok).toBe(false);
    if (!viaValidator.ok) expect(viaValidator.problems).toEqual([quorumSetDepthProblem(nested(5))]);
  });

  it('passes sets within the limit and leaves other mistakes to the validator', () => {
    expect(quorumSetDepthProblem(nested(4))).toBeUndefined();
    expect(quorumSetDepthProblem({ t: 1, v: [a], i: 'not a list' })).toBeUndefined();
    expect(quorumSetDepthProblem(null)).toBeUndefined();
  });

  it('names the first set too deep in document order', () => {
    const deepSecond = { t: 1, i: [nested(2), nested(4)] };
    expect(quorumSetDepthProblem(deepSecond)?.path).toEqual(['i', '1', 'i', '0', 'i', '0', 'i']);
  });
});
