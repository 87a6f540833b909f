import { type Bulletin, type EmittedStatement, bulletinRank, tally } from '../../../core/relay/tally.js';
import { type QuorumSet, quorumSetHash } from '../../../core/relay/quorum-set.js';
import type { Vote } from '../../../core/relay/vote.js';
import { BoundedCache } from './bounded-cache.js';
import { type SliceLookups, deepFreeze } from './slice-book.js';

/**
 * The core tally of `nodeId` over an item's stored statements. A node that signed statements about
 * the item counts with the slices it signed there (`declaredSlice`), else with the one it published
 * here; the relay node's slice is `relaySlice()`. Depends on the set of statements only, never on
 * the order they arrived in (issue 18, decision 0403), so relays holding the same statements agree.
 * `slices` holds what it may look up, read beforehand (`SliceBook.lookupsFor`).
 */
export function tallyItem(
  input: { itemId: string; nodeId: string; statements: readonly Vote[]; selfNodeId: string },
  slices: SliceLookups,
  relaySlice: () => QuorumSet | undefined,
): Bulletin {
  return tallyOver(itemFacts(input.statements, slices), input, slices, relaySlice);
}

/**
 * What every node's tally over one item's statements reads the same: the slices each voter
 * declared, and each voter's statements. `tallyItem` makes them for one tally; the cache of other
 * nodes' bulletins (`OtherBulletins`, decision 1080) makes them once per list of statements.
 */
export interface ItemFacts {
  statements: readonly Vote[];
  /** voter -> the distinct slices (by slice_hash) its statements about the item declare. */
  declared: ReadonlyMap<string, ReadonlyMap<string, QuorumSet>>;
  /** voter -> its statements, in the order of `statements`. */
  byVoter: ReadonlyMap<string, readonly Vote[]>;
}

export function itemFacts(statements: readonly Vote[], slices: SliceLookups): ItemFacts {
  const byVoter = new Map<string, Vote[]>();
  for (const s of statements) {
    const mine = byVoter.get(s.voter);
    if (mine) mine.push(s);
    else byVoter.set(s.voter, [s]);
  }
  return { statements, declared: declaredSlices(statements, slices), byVoter };
}

/** `tallyItem` over facts made beforehand (`itemFacts` of the same statements and lookups). */
export function tallyOver(
  facts: ItemFacts,
  input: { itemId: string; nodeId: string; selfNodeId: string },
  slices: SliceLookups,
  relaySlice: () => QuorumSet | undefined,
): Bulletin {
  const { itemId, nodeId } = input;
  const { statements, declared } = facts;
  const sliceOf = sliceResolver(declared, slices, input.selfNodeId, relaySlice);
  const emitted = emittedBy(facts.byVoter.get(nodeId) ?? [], nodeId);
  const mine = nodeId === input.selfNodeId ? undefined : declared.get(nodeId);
  if (!mine || mine.size <= 1) return tally({ self: nodeId, item: itemId, statements, sliceOf, emitted });
  // The node itself declared several slices: its bulletin under each of them, combined so that a
  // further slice can only raise it (as "any of them" does for the node as a quorum member: a
  // single `{t: 1, i: [...]}` would make it v-blocked only when blocked under every one).
  const each = [...mine.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([, own]) => tally({ self: nodeId, item: itemId, statements, sliceOf: (node) => (node === nodeId ? own : sliceOf(node)), emitted }));
  return highestOf(each);
}

/**
 * The highest of a node's bulletins under each slice it declared (the first in slice_hash order on
 * ties); `conflicted` when any is, or when two accept different values (it would hold both sides).
 */
function highestOf(bulletins: Bulletin[]): Bulletin {
  const first = bulletins[0] as Bulletin;
  const accepted = new Set(bulletins.filter((b) => bulletinRank[b.state] >= bulletinRank.accepted && b.value !== null).map((b) => b.value));
  if (bulletins.some((b) => b.state === 'conflicted') || accepted.size > 1) {
    return { ...first, state: 'conflicted', value: null, accepted_via: null, toEmit: [] };
  }
  return bulletins.reduce((best, b) => (bulletinRank[b.state] > bulletinRank[best.state] ? b : best), first);
}

function sliceResolver(
  declared: ReadonlyMap<string, ReadonlyMap<string, QuorumSet>>,
  slices: SliceLookups,
  selfNodeId: string,
  relaySlice: () => QuorumSet | undefined,
): (node: string) => QuorumSet | undefined {
  const cache = new Map<string, QuorumSet | undefined>();
  return (node) => {
    if (cache.has(node)) return cache.get(node);
    let q: QuorumSet | undefined;
    if (node === selfNodeId) q = relaySlice();
    else {
      const mine = declared.get(node);
      q = mine === undefined ? slices.publishedSlice(node)?.qset : declaredSlice(mine);
    }
    cache.set(node, q);
    return q;
  };
}

/** voter -> the distinct slices (by slice_hash) its statements about the item declare. */
function declaredSlices(statements: readonly Vote[], slices: SliceLookups): Map<string, Map<string, QuorumSet>> {
  const declared = new Map<string, Map<string, QuorumSet>>();
  for (const s of statements) {
    const q = s.slice ?? (s.slice_hash === undefined ? undefined : slices.quorumSetByHash(s.slice_hash));
    if (!q) continue;
    let mine = declared.get(s.voter);
    if (!mine) declared.set(s.voter, (mine = new Map()));
    const hash = s.slice_hash ?? hashOf(q);
    if (!mine.has(hash)) mine.set(hash, q);
  }
  return declared;
}

/**
 * A voter's slice for an item: the one its statements declare, or, when they declare several,
 * "any of them" (`{t: 1, i: [each]}`, inner sets in slice_hash order). Order-independent, and
 * monotone: a further statement can only add a way to satisfy the voter, so it never pulls the
 * voter out of a quorum another node already counted it in. ("The slice of the first statement"
 * depended on arrival order: two relays with the same statements answered different bulletins.)
 */
export function declaredSlice(mine: ReadonlyMap<string, QuorumSet>): QuorumSet | undefined {
  if (mine.size <= 1) return mine.values().next().value;
  const key = [...mine.keys()].sort().join(' ');
  let combined = combinedSlices.get(key);
  if (!combined) {
    // Frozen and kept: the core compiles each quorum set object once.
    combined = deepFreeze({ t: 1, v: [], i: [...mine.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, q]) => q) });
    combinedSlices.set(key, combined);
  }
  return combined;
}

const combinedSlices = new BoundedCache<string, QuorumSet>(4096);
/** slice_hash of an inline slice, once per (frozen, shared) object. */
const inlineHashes = new WeakMap<QuorumSet, string>();
export function hashOf(q: QuorumSet): string {
  let hash = inlineHashes.get(q);
  if (hash === undefined) inlineHashes.set(q, (hash = quorumSetHash(q)));
  return hash;
}

/** Tells `hashOf` the slice_hash of a frozen inline slice whose hash is known already (the statement log stored it). */
export function knowHashOf(q: QuorumSet, hash: string): void {
  inlineHashes.set(q, hash);
}

/** What `nodeId` already signed beyond its vote, the tally's `emitted`. */
function emittedBy(statements: readonly Vote[], nodeId: string): EmittedStatement[] {
  const out: EmittedStatement[] = [];
  for (const s of statements) {
    if (s.voter === nodeId && s.phase !== 'vote') out.push({ value: s.value, phase: s.phase });
  }
  return out;
}

/** Voters whose statements about the item declare more than one slice (compared by slice_hash), sorted. */
export function sliceChangers(statements: readonly Vote[]): string[] {
  const seen = new Map<string, string>();
  const changers = new Set<string>();
  for (const s of statements) {
    const hash = s.slice_hash ?? (s.slice ? hashOf(s.slice) : undefined);
    if (hash === undefined) continue;
    const first = seen.get(s.voter);
    if (first === undefined) seen.set(s.voter, hash);
    else if (first !== hash) changers.add(s.voter);
  }
  return [...changers].sort();
}
