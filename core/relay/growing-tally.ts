import { type QuorumSet, blocks, entryCount, quorumSetHash } from './quorum-set.js';
import { SliceNumbering } from './compiled-slice.js';
import { GrowingMaxQuorum } from './growing-quorum.js';
import { type Bulletin, type BulletinRules, type PhaseCounts, decideBulletin } from './tally.js';
import { type VotePhase, type VoteValue, otherValue } from './vote.js';

/**
 * The scp-s5 tally of node `self` for one item (see `tally`), kept up to date as statements arrive
 * instead of recomputed over all of them (issue 18): each statement updates the voter sets, the
 * largest quorums (`GrowingMaxQuorum`) and the v-blocking count it can change, and `bulletin()`
 * reads the answer off them. Same answers as `tally` over the same statements, in any order (a
 * property test holds it to that); slices are fixed for the life of one instance, except that a
 * voter's may be relaxed (`relax`); a caller whose slices change otherwise (a published slice,
 * self's) builds a new one.
 */
export class GrowingTally {
  private readonly voters: Record<VoteValue, Record<VotePhase, Set<string>>> = { yes: phaseSets(), no: phaseSets() };
  private readonly equivocators = new Set<string>();
  /** `equivocators` sorted, kept beside it (it changes rarely; the bulletin is read after every statement). */
  private sortedEquivocators: string[] = [];
  /** Per value: the largest quorum inside the voters with any statement for it. */
  private readonly anyPhase: Record<VoteValue, GrowingMaxQuorum>;
  /** Per value: the largest quorum inside the voters that accepted or confirmed it, plus self. */
  private readonly accepters: Record<VoteValue, GrowingMaxQuorum>;
  /** Per value: whether the accepters block self's slice. */
  private readonly blocking: Record<VoteValue, BlockingCount | undefined>;
  private readonly slice: QuorumSet | undefined;
  private readonly sliceHash: string | null;

  constructor(
    private readonly self: string,
    private readonly item: string,
    sliceOf: (node: string) => QuorumSet | undefined,
  ) {
    this.slice = sliceOf(self);
    this.sliceHash = this.slice ? quorumSetHash(this.slice) : null;
    // The four quorums see the same slices: one numbering compiles each slice once for all of them.
    const numbering = new SliceNumbering();
    this.anyPhase = { yes: new GrowingMaxQuorum(sliceOf, [], numbering), no: new GrowingMaxQuorum(sliceOf, [], numbering) };
    this.accepters = { yes: new GrowingMaxQuorum(sliceOf, [self], numbering), no: new GrowingMaxQuorum(sliceOf, [self], numbering) };
    const slice = this.slice;
    this.blocking = { yes: slice && new BlockingCount(slice), no: slice && new BlockingCount(slice) };
  }

  /** Adds a statement (or one self emitted); statements about other items are ignored, repeats change nothing. */
  add(statement: { item: string; voter: string; value: VoteValue; phase: VotePhase }): void {
    const { voter, value, phase } = statement;
    if (statement.item !== this.item) return;
    const set = this.voters[value][phase];
    if (set.has(voter)) return;
    set.add(voter);
    if (this.voters[otherValue(value)][phase].has(voter) && !this.equivocators.has(voter)) {
      this.equivocators.add(voter);
      this.sortedEquivocators = [...this.equivocators].sort();
    }
    this.anyPhase[value].add(voter);
    if (phase !== 'vote') {
      this.accepters[value].add(voter);
      this.blocking[value]?.add(voter);
    }
  }

  /**
   * Takes `voter`'s slice again from `sliceOf`, which now answers a weaker one (every set satisfying
   * the old slice satisfies the new: a voter's further declared slice counted as "any of them").
   * False when the tally cannot follow (self's slice, fixed here; a voter that had none): build a
   * new one then. Same answers afterwards as a new tally over the same statements.
   */
  relax(voter: string): boolean {
    if (voter === this.self) return false;
    for (const value of ['yes', 'no'] as const) {
      if (!this.anyPhase[value].relax(voter) || !this.accepters[value].relax(voter)) return false;
    }
    return true;
  }

  /** Work done by the four growing quorums together (see `GrowingMaxQuorum.work`), for tests. */
  work(): { steps: number; fullPeels: number; relaxations: number } {
    const total = { steps: 0, fullPeels: 0, relaxations: 0 };
    for (const q of [this.anyPhase.yes, this.anyPhase.no, this.accepters.yes, this.accepters.no]) {
      total.steps += q.work.steps;
      total.fullPeels += q.work.fullPeels;
      total.relaxations += q.work.relaxations;
    }
    return total;
  }

  /** Whether `voter` signed `phase` for `value` (among the statements added). */
  has(voter: string, value: VoteValue, phase: VotePhase): boolean {
    return this.voters[value][phase].has(voter);
  }

  /** Whether the voters that accepted or confirmed `value` (among the statements added) block `slice` (`blocks`). */
  acceptersBlock(value: VoteValue, slice: QuorumSet): boolean {
    const { accept, confirm } = this.voters[value];
    return blocks(slice, { has: (node) => accept.has(node) || confirm.has(node) });
  }

  /** Self's bulletin now: what `tally` answers over every statement added. */
  bulletin(): Bulletin {
    const { yes, no } = this.voters;
    const base = { counts: { yes: countsOf(yes), no: countsOf(no) }, equivocators: this.sortedEquivocators.slice(), slice_hash: this.sliceHash };
    return decideBulletin(base, this.rules);
  }

  /** The rules `decideBulletin` asks, answered from the kept sets; one object for the life of the tally. */
  private readonly rules: BulletinRules = {
    signed: (p, phase) => this.voters[p][phase].has(this.self),
    acceptRule: (p) => this.acceptRule(p),
    inConfirmingQuorum: (p) => this.accepters[p].has(this.self),
  };

  /** Which rule makes self accept p now, if any (see `tally`). */
  private acceptRule(p: VoteValue): 'quorum' | 'v-blocking' | null {
    if (!this.slice) return null;
    if (this.anyPhase[p].has(this.self)) return 'quorum';
    return this.blocking[p]?.blocked ? 'v-blocking' : null;
  }
}

function phaseSets(): Record<VotePhase, Set<string>> {
  return { vote: new Set(), accept: new Set(), confirm: new Set() };
}

function countsOf(phases: Record<VotePhase, Set<string>>): PhaseCounts {
  return { vote: phases.vote.size, accept: phases.accept.size, confirm: phases.confirm.size };
}

/**
 * `blocks(q, b)` for a set `b` that only grows, counted instead of recomputed: each inner set
 * keeps how many of its entries `b` meets, and a member joining updates only the sets that name it.
 */
class BlockingCount {
  /** node -> the sets (by index) naming it as a validator. */
  private readonly holders = new Map<string, number[]>();
  private readonly slack: number[] = [];
  private readonly parent: number[] = [];
  private readonly hits: number[] = [];
  private readonly met = new Set<string>();

  constructor(q: QuorumSet) {
    const visit = (set: QuorumSet, parent: number) => {
      const index = this.slack.length;
      this.slack.push(entryCount(set) - set.t);
      this.parent.push(parent);
      this.hits.push(0);
      for (const node of set.v) {
        const list = this.holders.get(node);
        if (list) list.push(index);
        else this.holders.set(node, [index]);
      }
      for (const inner of set.i) visit(inner, index);
    };
    visit(q, -1);
  }

  get blocked(): boolean {
    return (this.hits[0] as number) > (this.slack[0] as number);
  }

  add(node: string): void {
    if (this.met.has(node)) return;
    this.met.add(node);
    for (const holder of this.holders.get(node) ?? []) {
      // A set becomes blocked exactly when its hits pass its slack; that counts once in its parent.
      for (let set = holder; set >= 0; set = this.parent[set] as number) {
        const hits = (this.hits[set] as number) + 1;
        this.hits[set] = hits;
        if (hits !== (this.slack[set] as number) + 1) break;
      }
    }
  }
}
