import { type Bulletin, type EmittedStatement, type QuorumSet, type Vote, quorumSetHash, tally } from './protocol.js';
import { type SliceBook, sameQuorumSet } from './slice-book.js';

/**
 * The core tally of `nodeId` over an item's stored statements, where a node's slice is the one in
 * its first stored statement about the item (signed, and fixed from then on, so a later statement
 * cannot pull the node out of a quorum it already counted in), else the one it published here; the
 * relay node's slice is `relaySlice()`.
 */
export function tallyItem(
  input: { itemId: string; nodeId: string; statements: readonly Vote[]; selfNodeId: string },
  slices: SliceBook,
  relaySlice: () => QuorumSet | undefined,
): Bulletin {
  const { itemId, nodeId, statements } = input;
  return tally({ self: nodeId, item: itemId, statements, sliceOf: sliceResolver(statements, slices, input.selfNodeId, relaySlice), emitted: emittedBy(statements, nodeId) });
}

function sliceResolver(statements: readonly Vote[], slices: SliceBook, selfNodeId: string, relaySlice: () => QuorumSet | undefined): (node: string) => QuorumSet | undefined {
  // A voter's slice for the item is the one in its first stored statement (the list is in storage
  // order). The newest one used to win, which let a later statement with another slice withdraw
  // the voter from a quorum other nodes had already accepted through: their rank went down.
  const first = new Map<string, Vote>();
  for (const s of statements) if (!first.has(s.voter)) first.set(s.voter, s);
  const cache = new Map<string, QuorumSet | undefined>();
  return (node) => {
    if (cache.has(node)) return cache.get(node);
    let q: QuorumSet | undefined;
    if (node === selfNodeId) q = relaySlice();
    else {
      const s = first.get(node);
      if (s?.slice) q = s.slice;
      else if (s?.slice_hash !== undefined) q = slices.quorumSetByHash(s.slice_hash);
      q ??= slices.publishedSlice(node)?.qset;
    }
    cache.set(node, q);
    return q;
  };
}

/** What `nodeId` already signed beyond its vote, the tally's `emitted`. */
function emittedBy(statements: readonly Vote[], nodeId: string): EmittedStatement[] {
  const out: EmittedStatement[] = [];
  for (const s of statements) {
    if (s.voter === nodeId && s.phase !== 'vote') out.push({ value: s.value, phase: s.phase });
  }
  return out;
}

/**
 * Voters with statements under more than one slice (compared by content), sorted. Only the slice of
 * a voter's first statement counts; the later ones stay stored as evidence.
 */
export function sliceChangers(statements: readonly Vote[]): string[] {
  const first = new Map<string, Vote>();
  const changers = new Set<string>();
  for (const s of statements) {
    const seen = first.get(s.voter);
    if (!seen) first.set(s.voter, s);
    else if (!changers.has(s.voter) && !sameDeclaredSlice(seen, s)) changers.add(s.voter);
  }
  return [...changers].sort();
}

/** Whether two statements declare the same slice (inline or by hash). */
function sameDeclaredSlice(a: Vote, b: Vote): boolean {
  if (a.slice && b.slice) return sameQuorumSet(a.slice, b.slice);
  if (a.slice_hash !== undefined && b.slice_hash !== undefined) return a.slice_hash === b.slice_hash;
  const hashOf = (s: Vote) => s.slice_hash ?? (s.slice ? quorumSetHash(s.slice) : undefined);
  return hashOf(a) === hashOf(b);
}
