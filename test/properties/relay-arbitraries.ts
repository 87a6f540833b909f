import fc from 'fast-check';
import { type QuorumSet, defaultThreshold, sat } from '../../core/relay/quorum-set.js';
import { type Vote, type VotePhase, type VoteValue, votePhases, voteValues } from '../../core/relay/vote.js';
import type { SimBehaviour, SimNode } from '../support/relay-simulation.js';

/**
 * fast-check generators and brute-force oracles for the scp-s5 property tests. Node ids are readable
 * stand-ins (`n0`, `n1`, ... padded to 64 hex characters would hide which node is which in a shrunk
 * counterexample); the tally never parses ids, only the boundary does.
 */
export const nodeName = (k: number): string => `n${k}`;
export const ITEM = 'ab'.repeat(32);

/**
 * A random quorum set over `members` (all of them used, each once), nesting at most `depth` levels:
 * each member lands at this level or in one of up to two inner sets; thresholds anywhere in 1..entries.
 */
export function quorumSetOver(members: readonly string[], depth: number): fc.Arbitrary<QuorumSet> {
  const maxInner = depth > 1 ? Math.min(2, Math.floor(members.length / 2)) : 0;
  return fc.integer({ min: 0, max: maxInner }).chain((innerCount) => {
    if (innerCount === 0) return fc.integer({ min: 1, max: members.length }).map((t) => ({ t, v: [...members], i: [] }));
    return fc
      .array(fc.integer({ min: 0, max: innerCount }), { minLength: members.length, maxLength: members.length })
      .chain((labels) => {
        const here = members.filter((_, k) => labels[k] === 0);
        const groups = Array.from({ length: innerCount }, (_, g) => members.filter((_, k) => labels[k] === g + 1)).filter(
          (group) => group.length > 0,
        );
        return fc.tuple(...groups.map((group) => quorumSetOver(group, depth - 1))).chain((inner) => {
          const entries = here.length + inner.length;
          return fc.integer({ min: 1, max: Math.max(1, entries) }).map((t) => ({ t, v: here, i: inner }));
        });
      });
  });
}

/** A quorum set over a non-empty random subset of `pool`. */
export function quorumSetFrom(pool: readonly string[], depth = 3): fc.Arbitrary<QuorumSet> {
  return fc.shuffledSubarray([...pool], { minLength: 1 }).chain((members) => quorumSetOver(members, depth));
}

export type Topology = Map<string, QuorumSet>;

/**
 * Slices for `n` nodes: symmetric t-of-(n-1) (with the default or a random threshold) or random
 * heterogeneous nested slices. Every node has a slice; self is never in its own.
 */
export function topologyArb(n: number, options: { symmetricOnly?: boolean } = {}): fc.Arbitrary<Topology> {
  const names = Array.from({ length: n }, (_, k) => nodeName(k));
  const others = (self: string) => names.filter((m) => m !== self);
  const symmetric = fc
    .oneof(fc.constant(defaultThreshold(n - 1)), fc.integer({ min: 1, max: n - 1 }))
    .map((t) => new Map(names.map((self) => [self, { t, v: others(self), i: [] }])));
  if (options.symmetricOnly) return symmetric;
  const heterogeneous = fc
    .tuple(...names.map((self) => quorumSetFrom(others(self))))
    .map((slices) => new Map(names.map((self, k) => [self, slices[k] as QuorumSet])));
  return fc.oneof({ arbitrary: heterogeneous, weight: 3 }, { arbitrary: symmetric, weight: 1 });
}

/** Behaviours for the nodes of a topology: honest voters (random values), some equivocators, silent nodes. */
export function behavioursArb(
  names: readonly string[],
  options: { maxFaulty: number; honestVote?: VoteValue; silent?: boolean },
): fc.Arbitrary<Map<string, SimBehaviour>> {
  const honest = options.honestVote
    ? fc.constant<SimBehaviour>({ kind: 'honest', vote: options.honestVote })
    : fc.constantFrom<VoteValue | null>('yes', 'no', 'yes', 'no', null).map<SimBehaviour>((vote) => ({ kind: 'honest', vote }));
  const faulty: fc.Arbitrary<SimBehaviour> = options.silent
    ? fc.constantFrom<SimBehaviour>({ kind: 'equivocator' }, { kind: 'silent' })
    : fc.constant<SimBehaviour>({ kind: 'equivocator' });
  return fc
    .tuple(
      fc.shuffledSubarray([...names], { maxLength: options.maxFaulty }),
      fc.array(honest, { minLength: names.length, maxLength: names.length }),
      fc.array(faulty, { minLength: names.length, maxLength: names.length }),
    )
    .map(([bad, honestOnes, faultyOnes]) => {
      const out = new Map<string, SimBehaviour>();
      names.forEach((name, k) => out.set(name, bad.includes(name) ? (faultyOnes[k] as SimBehaviour) : (honestOnes[k] as SimBehaviour)));
      return out;
    });
}

export function simNodes(topology: Topology, behaviours: Map<string, SimBehaviour>): SimNode[] {
  return [...topology.keys()].map((id) => ({
    id,
    slice: topology.get(id),
    behaviour: behaviours.get(id) ?? { kind: 'silent' },
  }));
}

export function statement(voter: string, value: VoteValue, phase: VotePhase, item = ITEM): Vote {
  return {
    schema: 'x.vote/1',
    scheme: 'scp-s5',
    item,
    voter,
    value,
    phase,
    slice_hash: '0'.repeat(64),
    created_at: 0,
    sig: 'A'.repeat(86),
  };
}

/** Random statements by the given voters about ITEM. */
export function statementsArb(voters: readonly string[], maxLength = 20): fc.Arbitrary<Vote[]> {
  return fc.array(
    fc
      .tuple(fc.constantFrom(...voters), fc.constantFrom(...voteValues), fc.constantFrom(...votePhases))
      .map(([voter, value, phase]) => statement(voter, value, phase)),
    { maxLength },
  );
}

/** Every subset of `nodes` (n <= ~12), as sets. */
export function subsets(nodes: readonly string[]): Set<string>[] {
  const out: Set<string>[] = [];
  for (let mask = 0; mask < 1 << nodes.length; mask++) {
    out.push(new Set(nodes.filter((_, k) => (mask >> k) & 1)));
  }
  return out;
}

/** Oracle: a non-empty set where every member's slice is satisfied inside the set. */
export function isQuorum(set: ReadonlySet<string>, sliceOf: (n: string) => QuorumSet | undefined): boolean {
  if (set.size === 0) return false;
  for (const member of set) {
    const slice = sliceOf(member);
    if (!slice || !sat(slice, set)) return false;
  }
  return true;
}

/** Oracle: every quorum inside `nodes`, by enumeration. */
export function allQuorums(nodes: readonly string[], sliceOf: (n: string) => QuorumSet | undefined): Set<string>[] {
  return subsets(nodes).filter((s) => isQuorum(s, sliceOf));
}

/**
 * Oracle for SCP's "intertwined" (paper, section 4): every quorum containing a intersects every quorum
 * containing b in at least one well-behaved node.
 */
export function intertwined(a: string, b: string, quorums: Set<string>[], wellBehaved: ReadonlySet<string>): boolean {
  const qa = quorums.filter((q) => q.has(a));
  const qb = quorums.filter((q) => q.has(b));
  return qa.every((x) => qb.every((y) => [...x].some((n) => y.has(n) && wellBehaved.has(n))));
}

/**
 * Oracle for SCP's intact sets (paper, section 4): I of well-behaved nodes is intact when I is a quorum
 * and the system with every node outside I deleted (deleted nodes count as satisfied in every slice)
 * still enjoys quorum intersection. Returns all intact sets.
 */
export function intactSets(
  nodes: readonly string[],
  sliceOf: (n: string) => QuorumSet | undefined,
  wellBehaved: ReadonlySet<string>,
): Set<string>[] {
  const candidates = subsets(nodes.filter((n) => wellBehaved.has(n))).filter((s) => isQuorum(s, sliceOf));
  return candidates.filter((intact) => {
    const deleted = nodes.filter((n) => !intact.has(n));
    const quorumsAfterDeletion = subsets([...intact]).filter(
      (u) =>
        u.size > 0 &&
        [...u].every((m) => {
          const slice = sliceOf(m);
          return slice !== undefined && sat(slice, new Set([...u, ...deleted]));
        }),
    );
    return quorumsAfterDeletion.every((x) => quorumsAfterDeletion.every((y) => [...x].some((n) => y.has(n))));
  });
}

/** Renders a topology compactly for failure messages and regression tests. */
export function describeTopology(topology: Topology): string {
  return JSON.stringify(Object.fromEntries(topology));
}
