import type { SliceNumbering } from './compiled-slice.js';
import { CertificateState } from './certificate-state.js';

/**
 * The order of `GrowingMaxQuorum`'s out members (`ord`, a topological order of the certificate
 * graph, as in Pearce and Kelly's dynamic topological sort): finding the members a new certificate
 * would move (`coneAbove`), moving them below the member they now depend on (`placeBelow`), and
 * numbering everything afresh when the gaps between ords run out (`renumber`). The joins and peels
 * that decide who is in the quorum are `GrowingMaxQuorum`'s.
 */
export abstract class CertificateOrder extends CertificateState {
  protected topOrd = 0;
  /** Below every ord handed out since the last renumbering; `settleOut` counts down from it. */
  protected bottomOrd = 0;
  /**
   * Work done since construction, for tests that bound it without timing: members re-examined
   * (`steps`), full peels (`fullPeels`) and slices relaxed (`relaxations`).
   */
  readonly work = { steps: 0, fullPeels: 0, relaxations: 0 };
  /** Steps (a re-certification, a member visited) left to the current join before it starts over. */
  protected budget = 0;
  /** Per node: `coneMarks[id] === coneStamp` once the current `coneAbove` reached it. */
  protected coneStamp = 0;
  /** Per node: `movedMarks[id] === movedStamp` when it is in the current `recertify`'s moved cone. */
  protected movedStamp = 0;

  constructor(numbering: SliceNumbering) {
    super(numbering);
  }

  /**
   * Adds to `moved` the out members reachable from `from` through certificates with ord above
   * `floor` (`from` included); false when `target` is among them. Members marked in `moved` were
   * seen before without reaching `target`, and are not followed again. Marks instead of sets: at
   * the join that forms a large quorum, this walks most of the set, possibly many times.
   */
  protected coneAbove(from: number, floor: number, target: number, moved: number[]): boolean {
    const visit = ++this.coneStamp;
    const seen: number[] = [from];
    this.coneMarks[from] = visit;
    const todo = [from];
    for (let m = todo.pop(); m !== undefined; m = todo.pop()) {
      this.work.steps++;
      if (--this.budget < 0) return false;
      const certificate = this.certificates[m];
      if (!certificate) continue;
      for (const next of certificate) {
        if (next === target) return false;
        const nextOrd = this.ords[next] as number;
        if (Number.isNaN(nextOrd) || !this.slices[next] || nextOrd < floor || this.coneMarks[next] === visit) continue;
        this.coneMarks[next] = visit;
        if (this.movedMarks[next] === this.movedStamp) continue;
        seen.push(next);
        todo.push(next);
      }
    }
    for (const m of seen) {
      if (this.movedMarks[m] === this.movedStamp) continue;
      this.movedMarks[m] = this.movedStamp;
      moved.push(m);
    }
    return true;
  }

  /** Moves `moved` (closed under certificates above `below`, marked in `movedMarks`) just below ord `below`, keeping their order. */
  protected placeBelow(moved: readonly number[], below: number): void {
    let floor = -Infinity;
    for (const m of moved) {
      for (const dep of this.certificates[m] as number[]) {
        if (this.movedMarks[dep] === this.movedStamp) continue;
        const ord = this.ords[dep] as number;
        if (!Number.isNaN(ord) && this.slices[dep] && ord > floor) floor = ord;
      }
    }
    const sorted = moved.slice().sort((a, b) => (this.ords[a] as number) - (this.ords[b] as number));
    const low = floor === -Infinity ? below - sorted.length - 1 : floor;
    const step = (below - low) / (sorted.length + 1);
    if (!(step > MIN_ORD_STEP)) {
      this.renumber();
      return;
    }
    sorted.forEach((m, k) => (this.ords[m] = low + step * (k + 1)));
    // `settleOut` hands out ords below every other: keep its counter below these.
    if (low < this.bottomOrd) this.bottomOrd = low;
  }

  /**
   * Gives every out member a fresh integer ord, in a topological order of the certificate graph
   * (when the gaps left by repeated moves got too fine). Roots are taken in their old order.
   */
  protected renumber(): void {
    const out = this.joinedIds.filter((id) => this.slices[id] && !Number.isNaN(this.ords[id] as number));
    out.sort((a, b) => (this.ords[a] as number) - (this.ords[b] as number));
    const order: number[] = [];
    const placed = new Set<number>();
    const depsOf = (id: number) => (this.certificates[id] ?? []).filter((m) => this.slices[m] && !Number.isNaN(this.ords[m] as number));
    for (const root of out) {
      if (placed.has(root)) continue;
      placed.add(root);
      const stack: { id: number; deps: number[]; at: number }[] = [{ id: root, deps: depsOf(root), at: 0 }];
      while (stack.length > 0) {
        const top = stack[stack.length - 1] as { id: number; deps: number[]; at: number };
        const dep = top.deps[top.at++];
        if (dep === undefined) {
          stack.pop();
          order.push(top.id);
        } else if (!placed.has(dep)) {
          placed.add(dep);
          stack.push({ id: dep, deps: depsOf(dep), at: 0 });
        }
      }
    }
    order.forEach((id, k) => (this.ords[id] = k + 1));
    this.topOrd = order.length;
    this.bottomOrd = 0;
  }
}

/** Below this gap between ords, moved members get fresh integer ords instead (floating point runs out). */
export const MIN_ORD_STEP = 1e-6;
