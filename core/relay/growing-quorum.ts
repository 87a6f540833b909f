import type { QuorumSet } from './quorum-set.js';
import { type Compiled, SliceNumbering, blockingSet, satisfied } from './compiled-slice.js';
import { CertificateOrder, MIN_ORD_STEP } from './certificate-order.js';

/**
 * `maxQuorum(nodes, sliceOf)` of a node set that only grows, kept up to date as nodes join instead
 * of recomputed (issue 18: the relay re-tallied an item over all of its statements on every vote,
 * O(n^2) in voters to ingest a round). Slices are fixed for the life of one instance, except that
 * one may be weakened in place (`relax`); a caller whose slices change otherwise builds a new one.
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
 * Most joins do not even get there: a node whose slice is already blocked by nodes that cannot
 * depend on it is placed out at once (`settleOut`), and nothing else is re-examined.
 *
 * Node ids are numbered (slices compiled to those numbers once, by a `SliceNumbering` the growing
 * quorums of one tally share), so the hot loops index arrays instead of hashing 64-character ids;
 * the per-node state and the check of its invariants live in `CertificateState`.
 *
 * `maxQuorum` stays the reference: a property test checks that both agree after every join, on
 * random networks, slices and join orders.
 */
export class GrowingMaxQuorum extends CertificateOrder {
  // The questions the hot loops ask of `compiled-slice`, as functions made once per instance
  // (a closure per call costs more than the work, all the more under tsx's keepNames).
  /** Rank of an out member (its ord, -Infinity outside the set); undefined in the quorum. */
  private readonly outRank = (m: number): number | undefined => this.outOrd(m);
  /** Rank of a node that stays out during this join (its ord, -Infinity outside the set); undefined for others. */
  private readonly settledOutRank = (m: number): number | undefined => (this.isTentative(m) ? undefined : this.outOrd(m));
  private readonly inside = (m: number): boolean => this.inQuorum(m);

  /** `numbering`: share one between the growing quorums of one tally (they see the same slices). */
  constructor(
    private readonly sliceOf: (node: string) => QuorumSet | undefined,
    nodes: Iterable<string> = [],
    numbering = new SliceNumbering(),
  ) {
    super(numbering);
    this.addAll(nodes);
  }

  /** Whether `node` is in the largest quorum inside the set. */
  has(node: string): boolean {
    const id = this.numbering.idOf(node);
    return id !== undefined && this.inQuorum(id);
  }

  /** Whether `node` joined the set (in the quorum or not). */
  joined(node: string): boolean {
    const id = this.numbering.idOf(node);
    return id !== undefined && this.slices[id] !== undefined;
  }

  get size(): number {
    return this.quorumSize;
  }

  /** The largest quorum inside the set now. */
  members(): Set<string> {
    const inside = new Set<string>();
    for (const id of this.joinedIds) if (this.inQuorum(id)) inside.add(this.numbering.names[id] as string);
    return inside;
  }

  add(node: string): void {
    // One node at a time is the tally's case: no arrays unless the join needs the general path.
    const id = this.join(node);
    if (id !== undefined) this.settle([id]);
  }

  addAll(nodes: Iterable<string>): void {
    const fresh: number[] = [];
    for (const node of nodes) {
      const id = this.join(node);
      if (id !== undefined) fresh.push(id);
    }
    if (fresh.length > 0) this.settle(fresh);
  }

  /**
   * Takes a joined node's slice again from `sliceOf`, which must now answer a weaker one: every set
   * satisfying the old slice satisfies the new (a voter declaring a further slice, counted as "any
   * of them", `declaredSlice`). Kept up to date instead of built again (hostile19: one tally rebuild
   * per slice change made a round of slice-changing votes O(n^2)). A member in the quorum stays in
   * and nothing else moves: the quorum with the old slice is still one, and any quorum with the new
   * slices joined to it is a quorum with the old ones too. An out member's certificate may no longer
   * block its slice: it is re-examined as a joining node re-examines its dependents. False when the
   * node joined without a slice (a slice appearing is not a weaker one: the caller builds again).
   */
  relax(node: string): boolean {
    const id = this.numbering.idOf(node);
    const old = id === undefined ? undefined : this.slices[id];
    if (id === undefined || old === undefined) return true; // not joined: it joins with the new slice
    if (old === null) return false;
    const slice = this.sliceOf(node);
    if (!slice) return false;
    const compiled = this.numbering.compile(slice);
    if (compiled === old) return true;
    this.grow();
    this.slices[id] = compiled;
    const watched = new Set(old.members);
    for (const member of compiled.members) if (!watched.has(member)) (this.watchers[member] ??= []).push(id);
    this.work.relaxations++;
    if (this.inQuorum(id)) return true;
    // `patch` builds a flat slice's certificate from the one before, so that one keeps only members
    // the new slice still names (a weaker flat slice may name fewer: {t:2, v:[A, B]} -> {t:1, v:[B]}).
    const certificate = this.certificates[id] as number[];
    const named = new Set(compiled.members);
    if (!certificate.every((m) => named.has(m))) {
      this.forget(id, certificate);
      this.certificates[id] = certificate.filter((m) => named.has(m));
      this.remember(id, this.certificates[id]);
    }
    this.epoch++;
    this.budget = FULL_PEEL_BUDGET_FACTOR * this.joinedIds.length + 64;
    this.queueMarks[id] = this.epoch;
    const tentative: number[] = [];
    if (this.bringBack([], tentative, [id])) this.peel(tentative);
    else this.peelEverything();
    return true;
  }

  /**
   * Records `node` as joined; returns its id when it has a slice and its place must be worked out
   * (`settle`), undefined when it joined before, has no slice, or `settleOut` placed it.
   */
  private join(node: string): number | undefined {
    const id = this.numbering.intern(node);
    if (this.slices[id] !== undefined) return undefined;
    const slice = this.sliceOf(node);
    const compiled = slice && this.numbering.compile(slice);
    this.grow();
    this.joinedIds.push(id);
    if (compiled === undefined) {
      this.slices[id] = null; // out for good, like a node outside the set
      return undefined;
    }
    this.slices[id] = compiled;
    for (const member of compiled.members) (this.watchers[member] ??= []).push(id);
    return this.settleOut(id, compiled) ? undefined : id;
  }

  /** Works out the quorum again after the nodes `fresh` (with slices) joined. */
  private settle(fresh: readonly number[]): void {
    this.epoch++;
    this.quorumSize += fresh.length; // peel() takes out the ones that do not stay
    for (const id of fresh) this.tentativeMarks[id] = this.epoch;
    // Near the point where a large quorum forms, one join can reshape most certificates; past a
    // budget of about two full peels, peeling everything again is cheaper (and bounds the worst case).
    this.budget = FULL_PEEL_BUDGET_FACTOR * this.joinedIds.length + 64;
    const tentative = [...fresh];
    if (this.bringBack(fresh, tentative)) this.peel(tentative);
    else this.peelEverything();
  }

  /**
   * The common join, cheaply: a node whose slice is blocked by out members and nodes outside the
   * set, all below (in the order) every out member whose certificate names it, is out whatever
   * else happens. Those certificates named it while it was outside, so whatever depends on it
   * lies above them; its own certificate, all below them, cannot lead back to it. It takes that
   * certificate and an ord between the two, and every certificate stays valid as it is: nothing
   * needs re-examining. A certificate of nodes outside the set alone (not joined, or joined
   * without a slice: only a join brings those in) takes an ord below every other. Returns false
   * when no such certificate fits, and the join takes the general path.
   */
  private settleOut(id: number, slice: Compiled): boolean {
    const found = blockingSet(slice, this.outRank);
    if (!found) return false;
    let ord: number;
    if (found.rank === -Infinity) ord = --this.bottomOrd;
    else {
      let above = Infinity;
      for (const d of this.dependents[id] ?? []) above = Math.min(above, this.ords[d] as number);
      if (above === Infinity) ord = ++this.topOrd;
      else if (above - found.rank > 2 * MIN_ORD_STEP) ord = (found.rank + above) / 2;
      else return false;
    }
    this.ords[id] = ord;
    this.certificates[id] = found.nodes;
    this.remember(id, found.nodes);
    return true;
  }

  /** Forgets every certificate and peels the whole set again, like `maxQuorum`. */
  private peelEverything(): void {
    this.work.fullPeels++;
    this.epoch++;
    const everyone: number[] = [];
    for (const id of this.joinedIds) {
      this.certificates[id] = undefined;
      this.dependents[id] = undefined;
      if (this.slices[id]) {
        this.ords[id] = NaN;
        this.tentativeMarks[id] = this.epoch;
        everyone.push(id);
      }
    }
    this.dependents.fill(undefined);
    this.topOrd = 0;
    this.bottomOrd = 0;
    this.quorumSize = everyone.length;
    this.peel(everyone);
  }

  /**
   * Re-examines the out members whose certificates name a node of `joining` (or a member brought
   * back), after those already in `queue` (marked in `queueMarks`); marks tentative (and adds to `tentative`) those that find no new certificate.
   */
  private bringBack(joining: readonly number[], tentative: number[], queue: number[] = []): boolean {
    for (const id of joining) this.enqueueDependents(id, queue);
    for (let head = 0; head < queue.length; head++) {
      this.work.steps++;
      if (--this.budget < 0) return false;
      const id = queue[head] as number;
      this.queueMarks[id] = 0;
      const previous = this.certificates[id] as number[];
      this.forget(id, previous);
      const certificate = this.recertify(id);
      if (certificate) {
        this.certificates[id] = certificate;
        this.remember(id, certificate);
        continue;
      }
      this.certificates[id] = undefined;
      this.ords[id] = NaN;
      this.quorumSize++;
      this.tentativeMarks[id] = this.epoch;
      tentative.push(id);
      this.enqueueDependents(id, queue);
    }
    return this.budget >= 0;
  }

  /** Queues for `bringBack` the out members whose certificates name `id`, those not queued already. */
  private enqueueDependents(id: number, queue: number[]): void {
    const deps = this.dependents[id];
    if (!deps) return;
    for (const d of deps) {
      if (this.queueMarks[d] === this.epoch) continue;
      this.queueMarks[d] = this.epoch;
      queue.push(d);
    }
  }

  /**
   * A new certificate for out member `id` among the out members that do not depend on it, or
   * undefined. Members below it in the order are safe; one above it is used only when following
   * certificates from it never reaches `id`, and then it (with what it depends on above `id`)
   * moves just below `id`, so the order stays topological.
   */
  private recertify(id: number): number[] | undefined {
    const slice = this.slices[id] as Compiled;
    const ord = this.ords[id] as number;
    const patched = slice.i.length === 0 ? this.patch(slice, id, ord) : undefined;
    if (patched) return patched;
    // Cheapest blocking set by ord; members above `id` are checked for a path back to it only once
    // chosen (rarely one has one: it is then left out and the choice made again). Most calls end
    // at the first search (no blocking set at all), so the sets below are made only when needed.
    let found = blockingSet(slice, this.settledOutRank);
    let cyclic: Set<number> | undefined;
    // Closed under certificates above `id` (so moving it all below `id` keeps the order); a cone
    // found for a member a later attempt does not choose only moves a little more. Its members
    // (marked `movedMarks[m] === movedStamp`) are known not to lead back to `id`.
    const moved: number[] = [];
    this.movedStamp++;
    while (found) {
      let culprit: number | undefined;
      for (const m of found.nodes) {
        const mOrd = this.ords[m] as number;
        if (Number.isNaN(mOrd) || mOrd < ord || !this.slices[m]) continue;
        if (!this.coneAbove(m, ord, id, moved)) {
          culprit = m;
          break;
        }
      }
      if (culprit !== undefined) {
        const left = (cyclic ??= new Set<number>()).add(culprit);
        found = blockingSet(slice, (m) => (left.has(m) ? undefined : this.settledOutRank(m)));
        continue;
      }
      // The order is fixed before the certificate is filed (placeBelow reads certificates).
      this.certificates[id] = found.nodes;
      if (moved.length > 0) this.placeBelow(moved, ord);
      return found.nodes;
    }
    return undefined;
  }

  /**
   * The common case, cheaply: a flat slice whose certificate lost a member or two (they joined or
   * came back). Keeps the members still out and fills up from the rest of the slice with nodes
   * outside the set or out members below `ord`, scanning the slice once; undefined when that is
   * not enough (the general search then runs).
   */
  private patch(slice: Compiled, id: number, ord: number): number[] | undefined {
    const need = slice.v.length - slice.t + 1;
    const kept: number[] = [];
    for (const m of this.certificates[id] as number[]) if (!this.isTentative(m) && this.outOrd(m) !== undefined) kept.push(m);
    if (kept.length >= need) return kept.length === need ? kept : kept.slice(0, need);
    // A flat slice's certificate is a few members: a scan beats building a Set (a large one gets a Set).
    const inCertificate = kept.length > 16 ? new Set(kept) : undefined;
    for (const m of slice.v) {
      if ((inCertificate ? inCertificate.has(m) : kept.includes(m)) || this.isTentative(m)) continue;
      const mOrd = this.outOrd(m);
      if (mOrd === undefined || mOrd >= ord) continue;
      kept.push(m);
      if (kept.length === need) return kept;
    }
    return undefined;
  }

  /** Takes out, as `maxQuorum` does, the tentative members whose slices fail; everything else is fixed. */
  private peel(tentative: readonly number[]): void {
    const todo = [...tentative];
    for (let id = todo.pop(); id !== undefined; id = todo.pop()) {
      if (!this.isTentative(id)) continue;
      this.work.steps++;
      const slice = this.slices[id] as Compiled;
      if (satisfied(slice, this.inside)) continue;
      this.tentativeMarks[id] = 0;
      // Everything it names that is out is out already, below it in the order: no cycle.
      const certificate = (blockingSet(slice, this.settledOutRank) as { nodes: number[] }).nodes;
      this.ords[id] = ++this.topOrd;
      this.certificates[id] = certificate;
      this.quorumSize--;
      this.remember(id, certificate);
      for (const watcher of this.watchers[id] ?? []) if (this.isTentative(watcher)) todo.push(watcher);
    }
  }
}

/** Steps per joined node a join may take before it peels everything again instead. */
const FULL_PEEL_BUDGET_FACTOR = 2;
