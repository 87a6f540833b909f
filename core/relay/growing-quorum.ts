import { type QuorumSet, entryCount, quorumSetMembers } from './quorum-set.js';

/**
 * `maxQuorum(nodes, sliceOf)` of a node set that only grows, kept up to date as nodes join instead
 * of recomputed (issue 18: the relay re-tallied an item over all of its statements on every vote,
 * O(n^2) in voters to ingest a round). Slices are fixed for the life of one instance; a caller whose
 * slices change builds a new one.
 *
 * How: every member left out of the quorum keeps a *certificate*, members of its slice that are out
 * and that alone make its slice unsatisfiable. Certificates never form a cycle, so following them
 * always ends at nodes outside the set: a proof that no quorum inside the set contains the member.
 * An order (`ord`, a topological order of the certificate graph: a member's certificate names only
 * lower ords) keeps the "no cycle" check cheap, as in Pearce and Kelly's dynamic topological sort.
 * A joining node can only bring back members whose certificates name it (directly, or through
 * members brought back in turn); each of those either finds a new certificate or is tentatively
 * brought back, and the tentative ones are then peeled exactly like `maxQuorum` does, with
 * everything else held fixed. The work per join is proportional to the members it can affect, not
 * to the size of the set. Certificates prefer nodes outside the set, then out members of low ord.
 *
 * `maxQuorum` stays the reference: a property test checks that both agree after every join, on
 * random networks, slices and join orders.
 */
export class GrowingMaxQuorum {
  /** Every node that joined -> its slice (undefined: no slice, never in a quorum). */
  private readonly slices = new Map<string, QuorumSet | undefined>();
  /** Members left out of the quorum (those with a slice), with their place in the order and certificate. */
  private readonly out = new Map<string, OutMember>();
  /** node -> members whose slice names it (so a member that leaves is re-checked by its watchers). */
  private readonly watchers = new Map<string, string[]>();
  /** node -> out members whose certificate names it. */
  private readonly dependents = new Map<string, Set<string>>();
  private topOrd = 0;
  private quorumSize = 0;
  /** Steps (a re-certification, a member visited) left to the current join before it starts over. */
  private budget = 0;

  constructor(
    private readonly sliceOf: (node: string) => QuorumSet | undefined,
    nodes: Iterable<string> = [],
  ) {
    this.addAll(nodes);
  }

  /** Whether `node` is in the largest quorum inside the set. */
  has(node: string): boolean {
    return this.slices.get(node) !== undefined && !this.out.has(node);
  }

  /** Whether `node` joined the set (in the quorum or not). */
  joined(node: string): boolean {
    return this.slices.has(node);
  }

  get size(): number {
    return this.quorumSize;
  }

  /** The largest quorum inside the set now. */
  members(): Set<string> {
    const inside = new Set<string>();
    for (const [node, slice] of this.slices) if (slice !== undefined && !this.out.has(node)) inside.add(node);
    return inside;
  }

  add(node: string): void {
    this.addAll([node]);
  }

  addAll(nodes: Iterable<string>): void {
    const fresh: string[] = [];
    for (const node of nodes) {
      if (this.slices.has(node)) continue;
      const slice = this.sliceOf(node);
      this.slices.set(node, slice);
      if (slice === undefined) continue; // out for good, like a node outside the set
      fresh.push(node);
      for (const member of quorumSetMembers(slice)) {
        const list = this.watchers.get(member);
        if (list) list.push(node);
        else this.watchers.set(member, [node]);
      }
    }
    if (fresh.length === 0) return;
    this.quorumSize += fresh.length; // peel() takes out the ones that do not stay
    const tentative = new Set(fresh);
    // Near the point where a large quorum forms, one join can reshape most certificates; past a
    // budget of about one full peel, peeling everything again is cheaper (and bounds the worst case).
    this.budget = FULL_PEEL_BUDGET_FACTOR * this.slices.size + 64;
    if (this.bringBack(fresh, tentative)) this.peel(tentative);
    else this.peelEverything();
  }

  /** Forgets every certificate and peels the whole set again, like `maxQuorum`. */
  private peelEverything(): void {
    this.out.clear();
    this.dependents.clear();
    this.topOrd = 0;
    const everyone = new Set<string>();
    for (const [node, slice] of this.slices) if (slice !== undefined) everyone.add(node);
    this.quorumSize = everyone.size;
    this.peel(everyone);
  }

  /**
   * Re-examines the out members whose certificates name a node of `joining` (or a member brought
   * back); adds to `tentative` (and takes out of `out`) those that find no new certificate.
   */
  private bringBack(joining: readonly string[], tentative: Set<string>): boolean {
    const queue: string[] = [];
    const queued = new Set<string>();
    const enqueueDependents = (node: string) => {
      for (const d of this.dependents.get(node) ?? []) {
        if (queued.has(d)) continue;
        queued.add(d);
        queue.push(d);
      }
    };
    for (const node of joining) enqueueDependents(node);
    for (let head = 0; head < queue.length; head++) {
      if (--this.budget < 0) return false;
      const node = queue[head] as string;
      queued.delete(node);
      const entry = this.out.get(node) as OutMember;
      this.forget(node, entry.certificate);
      const certificate = this.recertify(node, entry, tentative);
      if (certificate) {
        this.remember(node, certificate);
        continue;
      }
      this.out.delete(node);
      this.quorumSize++;
      tentative.add(node);
      enqueueDependents(node);
    }
    return this.budget >= 0;
  }

  /**
   * A new certificate for out member `node` among the out members that do not depend on it, or
   * undefined. Members below it in the order are safe; one above it is used only when following
   * certificates from it never reaches `node`, and then it (with what it depends on above `node`)
   * moves just below `node`, so the order stays topological.
   */
  private recertify(node: string, entry: OutMember, tentative: ReadonlySet<string>): string[] | undefined {
    const slice = this.slices.get(node) as QuorumSet;
    const patched = slice.i.length === 0 ? this.patch(slice, entry, tentative) : undefined;
    if (patched) {
      entry.certificate = patched;
      return patched;
    }
    const usable = (m: string) => (tentative.has(m) ? undefined : this.outOrd(m));
    // Cheapest blocking set by ord; members above `node` are checked for a path back to it only
    // once chosen (rarely one has one: it is then left out and the choice made again).
    const cyclic = new Set<string>();
    const safe = new Set<string>();
    // Closed under certificates above `node` (so moving it all below `node` keeps the order); a cone
    // found for a member that a later attempt does not choose only moves a little more.
    const moved = new Set<string>();
    for (;;) {
      const found = blockingSet(slice, (m) => (cyclic.has(m) ? undefined : usable(m)));
      if (!found) return undefined;
      let culprit: string | undefined;
      for (const m of found.nodes) {
        const ord = this.out.get(m)?.ord;
        if (ord === undefined || ord < entry.ord) continue;
        if (!this.coneAbove(m, entry.ord, node, safe, moved)) {
          culprit = m;
          break;
        }
      }
      if (culprit !== undefined) {
        cyclic.add(culprit);
        continue;
      }
      entry.certificate = found.nodes;
      if (moved.size > 0) this.placeBelow(moved, entry);
      return found.nodes;
    }
  }

  /**
   * Adds to `cone` the out members reachable from `from` through certificates with ord above
   * `floor` (`from` included); false when `target` is among them. Members in `safe` were seen
   * before without reaching `target`; those seen now join them when it is not reached.
   */
  private coneAbove(from: string, floor: number, target: string, safe: Set<string>, cone: Set<string>): boolean {
    const seen: string[] = [from];
    const visited = new Set<string>([from]);
    const todo = [from];
    for (let m = todo.pop(); m !== undefined; m = todo.pop()) {
      if (--this.budget < 0) return false;
      for (const next of this.out.get(m)?.certificate ?? []) {
        if (next === target) return false;
        const entry = this.out.get(next);
        if (!entry || entry.ord < floor || visited.has(next)) continue;
        visited.add(next);
        seen.push(next);
        if (!safe.has(next)) todo.push(next);
        else cone.add(next);
      }
    }
    for (const m of seen) {
      safe.add(m);
      cone.add(m);
    }
    return true;
  }

  /**
   * The common case, cheaply: a flat slice whose certificate lost a member or two (they joined or
   * came back). Keeps the members still out and fills up from the rest of the slice with nodes
   * outside the set or out members below `entry`, scanning the slice once; undefined when that is
   * not enough (the general search then runs).
   */
  private patch(slice: QuorumSet, entry: OutMember, tentative: ReadonlySet<string>): string[] | undefined {
    const need = slice.v.length - slice.t + 1;
    const kept: string[] = [];
    for (const m of entry.certificate) if (!tentative.has(m) && this.outOrd(m) !== undefined) kept.push(m);
    if (kept.length >= need) return kept.slice(0, need);
    const inCertificate = new Set(kept);
    for (const m of slice.v) {
      if (inCertificate.has(m) || tentative.has(m)) continue;
      const ord = this.outOrd(m);
      if (ord === undefined || ord >= entry.ord) continue;
      kept.push(m);
      if (kept.length === need) return kept;
    }
    return undefined;
  }

  /** Moves `moved` (closed under certificates above `entry`) just below `entry`, keeping their order. */
  private placeBelow(moved: ReadonlySet<string>, entry: OutMember): void {
    let floor = -Infinity;
    for (const m of moved) {
      for (const dep of (this.out.get(m) as OutMember).certificate) {
        if (moved.has(dep)) continue;
        const ord = this.out.get(dep)?.ord;
        if (ord !== undefined && ord > floor) floor = ord;
      }
    }
    const sorted = [...moved].map((m) => this.out.get(m) as OutMember).sort((a, b) => a.ord - b.ord);
    const low = floor === -Infinity ? entry.ord - sorted.length - 1 : floor;
    const step = (entry.ord - low) / (sorted.length + 1);
    if (!(step > MIN_ORD_STEP)) {
      this.renumber();
      return;
    }
    sorted.forEach((m, k) => (m.ord = low + step * (k + 1)));
  }

  /**
   * Gives every out member a fresh integer ord, in a topological order of the certificate graph
   * (when the gaps left by repeated moves got too fine). Roots are taken in their old order.
   */
  private renumber(): void {
    const order: OutMember[] = [];
    const placed = new Set<OutMember>();
    for (const root of [...this.out.values()].sort((a, b) => a.ord - b.ord)) {
      if (placed.has(root)) continue;
      placed.add(root);
      const stack: { member: OutMember; deps: OutMember[]; at: number }[] = [{ member: root, deps: this.depsOf(root), at: 0 }];
      while (stack.length > 0) {
        const top = stack[stack.length - 1] as { member: OutMember; deps: OutMember[]; at: number };
        const dep = top.deps[top.at++];
        if (dep === undefined) {
          stack.pop();
          order.push(top.member);
        } else if (!placed.has(dep)) {
          placed.add(dep);
          stack.push({ member: dep, deps: this.depsOf(dep), at: 0 });
        }
      }
    }
    order.forEach((m, k) => (m.ord = k + 1));
    this.topOrd = order.length;
  }

  private depsOf(member: OutMember): OutMember[] {
    const deps: OutMember[] = [];
    for (const m of member.certificate) {
      const entry = this.out.get(m);
      if (entry) deps.push(entry);
    }
    return deps;
  }

  /** Takes out, as `maxQuorum` does, the tentative members whose slices fail; everything else is fixed. */
  private peel(tentative: Set<string>): void {
    const todo = [...tentative];
    for (let node = todo.pop(); node !== undefined; node = todo.pop()) {
      if (!tentative.has(node)) continue;
      const slice = this.slices.get(node) as QuorumSet;
      if (satisfied(slice, (m) => this.has(m))) continue;
      tentative.delete(node);
      // Everything it names that is out is out already, below it in the order: no cycle.
      const certificate = (blockingSet(slice, (m) => (tentative.has(m) ? undefined : this.outOrd(m))) as { nodes: string[] }).nodes;
      this.out.set(node, { ord: ++this.topOrd, certificate });
      this.quorumSize--;
      this.remember(node, certificate);
      for (const watcher of this.watchers.get(node) ?? []) if (tentative.has(watcher)) todo.push(watcher);
    }
  }

  /** Ord of `node` when it is out (-Infinity outside the set or without a slice); undefined when in the quorum. */
  private outOrd(node: string): number | undefined {
    if (this.slices.get(node) === undefined) return -Infinity;
    return this.out.get(node)?.ord;
  }

  private remember(node: string, certificate: readonly string[]): void {
    for (const m of certificate) {
      const deps = this.dependents.get(m);
      if (deps) deps.add(node);
      else this.dependents.set(m, new Set([node]));
    }
  }

  private forget(node: string, certificate: readonly string[]): void {
    for (const m of certificate) this.dependents.get(m)?.delete(node);
  }
}

interface OutMember {
  /** Place in a topological order of certificates: a certificate names only members of lower ord. */
  ord: number;
  certificate: string[];
}

/** Steps per joined node a join may take before it peels everything again instead. */
const FULL_PEEL_BUDGET_FACTOR = 2;

/** Below this gap between ords, moved members get fresh integer ords instead (floating point runs out). */
const MIN_ORD_STEP = 1e-6;

/** Whether `q` is satisfied by the nodes `inside` says are in. */
function satisfied(q: QuorumSet, inside: (node: string) => boolean): boolean {
  let met = 0;
  for (const node of q.v) if (inside(node) && ++met >= q.t) return true;
  for (const inner of q.i) if (satisfied(inner, inside) && ++met >= q.t) return true;
  return false;
}

/**
 * The cheapest blocking set of `q` among usable nodes: `entries - t + 1` blocked entries (a
 * usable validator, or an inner set blocked recursively), those of lowest rank. Its rank is the
 * highest rank in it.
 */
function blockingSet(q: QuorumSet, usable: (node: string) => number | undefined): { nodes: string[]; rank: number } | undefined {
  const need = entryCount(q) - q.t + 1;
  const options: { nodes: string[]; rank: number }[] = [];
  for (const node of q.v) {
    const rank = usable(node);
    if (rank !== undefined) options.push({ nodes: [node], rank });
  }
  for (const inner of q.i) {
    const found = blockingSet(inner, usable);
    if (found) options.push(found);
  }
  if (options.length < need) return undefined;
  if (options.length > need) options.sort((a, b) => a.rank - b.rank);
  const nodes: string[] = [];
  let rank = -1;
  for (let k = 0; k < need; k++) {
    const option = options[k] as { nodes: string[]; rank: number };
    nodes.push(...option.nodes);
    if (option.rank > rank) rank = option.rank;
  }
  return { nodes, rank };
}
