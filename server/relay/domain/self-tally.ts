import { GrowingTally } from '../../../core/relay/growing-tally.js';
import type { Bulletin } from '../../../core/relay/tally.js';
import type { QuorumSet } from '../../../core/relay/quorum-set.js';
import type { Vote } from '../../../core/relay/vote.js';
import type { HasSigned } from './bulletin-floor.js';
import type { Steps } from '../../storage/sql-steps.js';
import type { SliceBook, SliceLookups } from './slice-book.js';
import { declaredSlice, hashOf } from './voting-tally.js';

/** The relay node's bulletin for an item, and what the floor and the answer need beside it. */
export interface SelfBulletin {
  bulletin: Bulletin;
  hasSigned: HasSigned;
  /** Voters whose statements about the item declare more than one slice, sorted. */
  sliceChangers: string[];
}

/**
 * The relay node's tally of each recently used item, kept up to date statement by statement
 * (`GrowingTally`), so a vote costs the same whether the item has 100 voters or 10 000 (issue 18).
 * Answers exactly what `tallyItem` answers for the relay node over the stored statements; the
 * growing tally holds slices fixed, so an item's tally is built again from its statements when a
 * slice it used changes in a way it cannot follow: the relay's own, or a voter's that is not only
 * weakened (a further slice a voter's statements declare is followed in place, `GrowingTally.relax`).
 * Published slices never count here: the tally looks only at voters (and
 * every stored statement declares its slice, inline or by a known slice_hash) and at the relay node.
 */
export class SelfTallies {
  /** Item id -> its kept tally, least recently used first. */
  private readonly items = new Map<string, ItemTally>();
  /** Statements counted by the kept tallies together (what their memory grows with). */
  private keptStatements = 0;
  /** Tallies built from an item's stored statements so far (tests bound it: each build is a pass over all of them). */
  builds = 0;

  constructor(
    private readonly selfNodeId: string,
    private readonly slices: SliceBook,
    private readonly relaySlice: () => Steps<QuorumSet | undefined>,
    private readonly statementsOf: (itemId: string) => Steps<readonly Vote[]>,
    private readonly cachedItems: number,
    /** Statements the kept tallies may count together; default `MAX_KEPT_STATEMENTS`. */
    private readonly maxStatements = MAX_KEPT_STATEMENTS,
  ) {}

  forgetCached(): void {
    this.items.clear();
    this.keptStatements = 0;
  }

  /** The relay node's bulletin now (not floored: the caller applies the floor). */
  *bulletin(itemId: string): Steps<SelfBulletin> {
    const item = yield* this.current(itemId);
    return { bulletin: item.tally.bulletin(), hasSigned: item.hasSigned, sliceChangers: [...item.changers].sort() };
  }

  /**
   * Whether the voters that accepted or confirmed either value about the item block `slice`: the
   * only way a node that signed nothing about the item ranks above `uncommitted` under that slice
   * (`tally`'s rules: no own vote, so no quorum of its own; only v-blocking). Answered from the kept
   * tally's voter sets, O(slice), where a full tally is a pass over every statement (decision 1080).
   */
  *acceptersBlock(itemId: string, slice: QuorumSet): Steps<boolean> {
    const { tally } = yield* this.current(itemId);
    return tally.acceptersBlock('yes', slice) || tally.acceptersBlock('no', slice);
  }

  /** The quorum work of the item's kept tally so far (`GrowingTally.work`), for tests; undefined when not kept. */
  work(itemId: string): ReturnType<GrowingTally['work']> | undefined {
    return this.items.get(itemId)?.tally.work();
  }

  /** A statement was stored: the item's tally (when kept) takes it, or is dropped to be built again. */
  *stored(vote: Vote): Steps<void> {
    const item = this.items.get(vote.item);
    if (!item) return;
    yield* this.slices.lookupsFor([vote], [], item.lookups);
    if (item.add(vote)) this.keptStatements++;
    else this.drop(vote.item);
    this.trim(vote.item);
  }

  private *current(itemId: string): Steps<ItemTally> {
    const relaySlice = yield* this.relaySlice();
    const kept = this.items.get(itemId);
    if (kept && kept.relaySlice === relaySlice) {
      // Marked as just used: Map keeps insertion order.
      this.items.delete(itemId);
      this.items.set(itemId, kept);
      return kept;
    }
    this.drop(itemId);
    const statements = yield* this.statementsOf(itemId);
    const item = new ItemTally(itemId, this.selfNodeId, yield* this.slices.lookupsFor(statements), relaySlice);
    item.build(statements);
    this.builds++;
    this.items.set(itemId, item);
    this.keptStatements += item.counted;
    this.trim(itemId);
    return item;
  }

  private drop(itemId: string): void {
    const item = this.items.get(itemId);
    if (!item) return;
    this.items.delete(itemId);
    this.keptStatements -= item.counted;
  }

  /** Forgets the least recently used tallies (never `keep`) past either bound. */
  private trim(keep: string): void {
    for (const oldest of this.items.keys()) {
      if (this.items.size <= this.cachedItems && this.keptStatements <= this.maxStatements) return;
      if (oldest !== keep) this.drop(oldest);
    }
  }
}

/**
 * Statements the relay node's kept tallies count together, by default: about 0.5 KiB each (a
 * 10 000-voter round of 20 000 statements keeps ~11 MB), so ~100 MB at most, whatever the number
 * of items. A tally forgotten is built again from the stored statements when next needed.
 */
export const MAX_KEPT_STATEMENTS = 200_000;

/** One item's growing tally with the slice bookkeeping `tallyItem` does over all statements. */
class ItemTally {
  readonly tally: GrowingTally;
  /** voter -> the distinct slices (by slice_hash) its statements declare. */
  private readonly declared = new Map<string, Map<string, QuorumSet>>();
  /** voter -> the slice_hash of its first statement that declared one, for `changers`. */
  private readonly firstHash = new Map<string, string>();
  readonly changers = new Set<string>();
  /** Voters with a statement already counted (their slice is then fixed in the tally). */
  private readonly countedVoters = new Set<string>();
  /** Whether the relay node signed a statement here; made once per item, not once per bulletin. */
  readonly hasSigned: HasSigned = (value, phase) => this.tally.has(this.selfNodeId, value, phase);

  constructor(
    itemId: string,
    private readonly selfNodeId: string,
    /** What `sliceOf` looks up, read for every statement before it is counted. */
    readonly lookups: SliceLookups,
    readonly relaySlice: QuorumSet | undefined,
  ) {
    this.tally = new GrowingTally(selfNodeId, itemId, (node) => this.sliceOf(node));
  }

  /** Statements added (the kept tallies' memory grows with it). */
  counted = 0;

  /** Counts every stored statement, each voter with the slice all of its statements declare. */
  build(statements: readonly Vote[]): void {
    for (const vote of statements) this.declare(vote);
    for (const vote of statements) {
      this.countedVoters.add(vote.voter);
      this.tally.add(vote);
    }
    this.counted += statements.length;
  }

  /**
   * Counts a new statement; false when it changes the slice of a voter already counted in a way
   * the tally cannot follow (from its published slice to a declared one: it must be built again).
   */
  add(vote: Vote): boolean {
    const before = this.countedVoters.has(vote.voter) ? this.sliceKey(vote.voter) : undefined;
    const declaredBefore = this.declared.has(vote.voter);
    this.declare(vote);
    if (before !== undefined && vote.voter !== this.selfNodeId && this.sliceKey(vote.voter) !== before) {
      // A further declared slice only weakens the voter's ("any of them"): the tally follows it in
      // place. Building it again over every statement, once per slice change, was O(n^2) (hostile19).
      if (!declaredBefore || !this.tally.relax(vote.voter)) return false;
    }
    this.countedVoters.add(vote.voter);
    this.tally.add(vote);
    this.counted++;
    return true;
  }

  /** What `tallyItem`'s resolver answers for `node`. */
  private sliceOf(node: string): QuorumSet | undefined {
    if (node === this.selfNodeId) return this.relaySlice;
    const mine = this.declared.get(node);
    return mine === undefined ? this.lookups.publishedSlice(node)?.qset : declaredSlice(mine);
  }

  /** Names the slice `sliceOf` would answer, to notice a change without comparing sets. */
  private sliceKey(node: string): string {
    const mine = this.declared.get(node);
    return mine === undefined ? `published ${this.lookups.publishedSlice(node)?.hash ?? 'none'}` : [...mine.keys()].sort().join(' ');
  }

  private declare(vote: Vote): void {
    const hash = vote.slice_hash ?? (vote.slice ? hashOf(vote.slice) : undefined);
    if (hash === undefined) return;
    const first = this.firstHash.get(vote.voter);
    if (first === undefined) this.firstHash.set(vote.voter, hash);
    else if (first !== hash) this.changers.add(vote.voter);
    const q = vote.slice ?? this.lookups.quorumSetByHash(hash);
    if (!q) return;
    let mine = this.declared.get(vote.voter);
    if (!mine) this.declared.set(vote.voter, (mine = new Map()));
    if (!mine.has(hash)) mine.set(hash, q);
  }
}
