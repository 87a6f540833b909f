import type { QuorumSet } from './quorum-set.js';

/**
 * Slices with node ids numbered (`SliceNumbering`, shared by the growing quorums of one tally), and
 * the questions `GrowingMaxQuorum` asks of them: is a slice satisfied, and which out members alone
 * block it.
 */

/** A slice with its node ids numbered; `members` every node it names, once. */
export interface Compiled {
  t: number;
  v: number[];
  i: Compiled[];
  members: number[];
}

/** Node ids numbered 0, 1, 2, ... in the order first seen, and slices compiled to those numbers once. */
export class SliceNumbering {
  private readonly ids = new Map<string, number>();
  /** id -> node id. */
  readonly names: string[] = [];
  private readonly compiled = new WeakMap<QuorumSet, Compiled>();
  /** `marks[id] === stamp` when `repeats` saw id in the current list. */
  private readonly marks: number[] = [];
  private stamp = 0;

  /** How many nodes are numbered (ids run from 0 to size - 1). */
  get size(): number {
    return this.names.length;
  }

  idOf(node: string): number | undefined {
    return this.ids.get(node);
  }

  intern(node: string): number {
    let id = this.ids.get(node);
    if (id === undefined) {
      id = this.names.length;
      this.ids.set(node, id);
      this.names.push(node);
      this.marks.push(0);
    }
    return id;
  }

  /** `q` with its nodes numbered; the same object for the same `q` (slices are kept by object). */
  compile(q: QuorumSet): Compiled {
    let compiled = this.compiled.get(q);
    if (!compiled) {
      const inner: Compiled[] = [];
      for (const set of q.i) inner.push(this.compile(set));
      const v: number[] = [];
      for (const node of q.v) v.push(this.intern(node));
      const flat = inner.length === 0 && !this.repeats(v);
      compiled = { t: q.t, v, i: inner, members: flat ? v : [...new Set([...v, ...inner.flatMap((set) => set.members)])] };
      this.compiled.set(q, compiled);
    }
    return compiled;
  }

  /** Whether `ids` names a node twice (a slice should not, but `members` must list each once). */
  private repeats(ids: readonly number[]): boolean {
    const stamp = ++this.stamp;
    for (const id of ids) {
      if (this.marks[id] === stamp) return true;
      this.marks[id] = stamp;
    }
    return false;
  }
}

/** Whether `q` is satisfied by the nodes `inside` says are in. */
export function satisfied(q: Compiled, inside: (id: number) => boolean): boolean {
  let met = 0;
  for (const id of q.v) if (inside(id) && ++met >= q.t) return true;
  for (const inner of q.i) if (satisfied(inner, inside) && ++met >= q.t) return true;
  return false;
}

/**
 * The cheapest blocking set of `q` among usable nodes: `entries - t + 1` blocked entries (a
 * usable validator, or an inner set blocked recursively), those of lowest rank. Its rank is the
 * highest rank in it.
 */
export function blockingSet(q: Compiled, usable: (id: number) => number | undefined): { nodes: number[]; rank: number } | undefined {
  if (q.i.length === 0) return flatBlockingSet(q, usable);
  const need = q.v.length + q.i.length - q.t + 1;
  const options: { nodes: number[]; rank: number }[] = [];
  for (const id of q.v) {
    const rank = usable(id);
    if (rank !== undefined) options.push({ nodes: [id], rank });
  }
  for (const inner of q.i) {
    const found = blockingSet(inner, usable);
    if (found) options.push(found);
  }
  if (options.length < need) return undefined;
  if (options.length > need) options.sort((a, b) => a.rank - b.rank);
  const nodes: number[] = [];
  let rank = -Infinity;
  for (let k = 0; k < need; k++) {
    const option = options[k] as { nodes: number[]; rank: number };
    nodes.push(...option.nodes);
    if (option.rank > rank) rank = option.rank;
  }
  return { nodes, rank };
}

/** Usable validators and their ranks, reused by every `flatBlockingSet` call (it never nests). */
const scratchIds: number[] = [];
const scratchRanks: number[] = [];

/**
 * `blockingSet` of a slice without inner sets, the same answer without an object per option: the
 * `need` usable validators of lowest rank, ties in slice order (as the stable sort there gives).
 */
function flatBlockingSet(q: Compiled, usable: (id: number) => number | undefined): { nodes: number[]; rank: number } | undefined {
  const need = q.v.length - q.t + 1;
  let count = 0;
  let lowest = 0; // how many have rank -Infinity (nodes outside the set): they come first
  for (const id of q.v) {
    const rank = usable(id);
    if (rank === undefined) continue;
    scratchIds[count] = id;
    scratchRanks[count] = rank;
    count++;
    if (rank === -Infinity) lowest++;
  }
  if (count < need) return undefined;
  const nodes: number[] = [];
  if (count === need || lowest >= need) {
    // All of them in slice order, or the first `need` of rank -Infinity: no choice to make.
    let rank = -Infinity;
    for (let k = 0; k < count && nodes.length < need; k++) {
      const r = scratchRanks[k] as number;
      if (count > need && r !== -Infinity) continue;
      nodes.push(scratchIds[k] as number);
      if (r > rank) rank = r;
    }
    return { nodes, rank };
  }
  for (let k = 0; k < count; k++) {
    if (scratchRanks[k] !== -Infinity) continue;
    nodes.push(scratchIds[k] as number);
    scratchRanks[k] = NaN;
  }
  // Then the lowest rank left, `need - lowest` times (the first of equal ones); a picked one gets rank NaN.
  let rank = -Infinity;
  while (nodes.length < need) {
    let best = -1;
    for (let k = 0; k < count; k++) {
      const r = scratchRanks[k] as number;
      if (!Number.isNaN(r) && (best < 0 || r < (scratchRanks[best] as number))) best = k;
    }
    nodes.push(scratchIds[best] as number);
    rank = scratchRanks[best] as number; // picked in rising order: the last is the highest
    scratchRanks[best] = NaN;
  }
  return { nodes, rank };
}
