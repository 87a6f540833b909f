import type { Clock } from '../../../core/clock.js';
import type { Bulletin } from '../../../core/relay/tally.js';
import type { NodeKey } from '../../../core/relay/node-id.js';
import type { QuorumSet } from '../../../core/relay/quorum-set.js';
import type { SliceDeclaration } from '../../../core/relay/slice-declaration.js';
import type { Vote } from '../../../core/relay/vote.js';
import { applyFloor, raisesFloor } from './bulletin-floor.js';
import { OtherBulletins } from './other-bulletins.js';
import type { RelayStore } from '../relay-store.js';
import type { Steps } from '../../storage/sql-steps.js';
import { type DefaultSliceSources, SelfVoter, type Emission } from './self-voter.js';
import { type PublishedSlice, SliceBook } from './slice-book.js';
import { StatementLog, type StoredVote } from './statement-log.js';
import { SelfTallies } from './self-tally.js';
import { hashOf } from './voting-tally.js';

export type { Emission, PublishedSlice, StoredVote };

/**
 * A bulletin as the relay reports it: the core tally, floored at the highest one reported before
 * for the same node and item, plus the voters that signed statements under different slices.
 */
export interface RelayBulletin extends Bulletin {
  /**
   * Voters whose statements about the item carry more than one slice, sorted. Only the slice of a
   * voter's first statement for the item counts; the later ones stay stored as evidence.
   */
  sliceChangers: string[];
}

export interface VotingOptions {
  store: RelayStore;
  clock: Clock;
  selfKey: NodeKey;
  /**
   * The relay node's slice. Absent: the default built from `defaultSliceFrom` (operators and
   * configured peer relays, 67 %), rebuilt whenever those change; none when both are empty.
   */
  selfSlice?: QuorumSet;
  /** What the default relay slice is built from; default none (the relay then never accepts). */
  defaultSliceFrom?: DefaultSliceSources;
  /** Entries in each parsed-slice cache (published slices, slices by hash, voters' inline slices); default 4096. */
  cachedSlices?: number;
  /** Items whose parsed statements are kept; default 64. */
  cachedItems?: number;
  /** Parsed statements kept in memory across cached items; default `MAX_CACHED_STATEMENTS` (statement-log.ts). */
  cachedStatements?: number;
  /** Statements the relay node's kept tallies count together; default `MAX_KEPT_STATEMENTS` (self-tally.ts). */
  keptTallyStatements?: number;
  /** Other nodes whose computed bulletins are kept per item; default `NODES_PER_ITEM` (other-bulletins.ts). */
  cachedNodeBulletins?: number;
}

/**
 * Votes, slices and the relay's own participation in scp-s5: one entry point over the slice book
 * (published slices, quorum sets by hash), the statement log (stored statements), the bulletin
 * floor (ranks never go down) and the self-voter (the relay node's slice and statements). The
 * tally itself is the core's `tally`; these parts only feed it stored facts.
 *
 * Parsed slices and statements are cached (decision 0053). Slices and votes are written only
 * through these parts, on the store's one connection, so each write drops what it changes from the
 * caches inside its own transaction, and a rolled back transaction, or (PostgreSQL) another
 * replica's commit, empties them (`RelayStore.onCachesInvalid`, decision 0441).
 */
export class Voting {
  private readonly slices: SliceBook;
  private readonly log: StatementLog;
  private readonly self: SelfVoter;
  private readonly selfTallies: SelfTallies;
  private readonly others: OtherBulletins;

  constructor(private readonly options: VotingOptions) {
    const cachedSlices = options.cachedSlices ?? 4096;
    const cachedItems = options.cachedItems ?? 64;
    this.slices = new SliceBook(options.store, cachedSlices);
    this.log = new StatementLog(options.store, this.slices, { cachedSlices, cachedItems, ...(options.cachedStatements === undefined ? {} : { cachedStatements: options.cachedStatements }) }, (vote) => this.selfTallies.stored(vote));
    this.selfTallies = new SelfTallies(options.selfKey.nodeId, this.slices, () => this.self.selfSlice(), (itemId) => this.log.statements(itemId), cachedItems, options.keptTallyStatements);
    this.self = new SelfVoter(options.store, this.slices, this.log, this.selfTallies, options.selfKey, options.selfSlice, options.defaultSliceFrom);
    this.others = new OtherBulletins(options.selfKey.nodeId, this.slices, options.cachedNodeBulletins);
    options.store.onCachesInvalid(() => this.forgetCached());
  }

  /** Empties every cache (after a rollback or another replica's commit; the next lookups read the database again). */
  forgetCached(): void {
    this.slices.forgetCached();
    this.log.forgetCached();
    this.self.forgetCached();
    this.selfTallies.forgetCached();
  }

  parseSlice(input: unknown, owner: string, loc: (string | number)[]): { qset: QuorumSet; tAuto: boolean } {
    return this.slices.parseSlice(input, owner, loc);
  }

  *publishedSlice(nodeId: string): Steps<PublishedSlice | undefined> {
    return yield* this.slices.publishedSlice(nodeId);
  }

  /** Publishes a node's slice; call inside a transaction. Its bulletins are floored first (`holdFloorsOf`). */
  *setSlice(nodeId: string, qset: QuorumSet, tAuto: boolean, nowMs: number): Steps<{ hash: string; qset: QuorumSet }> {
    yield* this.holdFloorsOf(nodeId, nowMs);
    return yield* this.slices.setSlice(nodeId, qset, tAuto, nowMs);
  }

  /**
   * Publishes a node's verified x.slice/1 declaration (from a peer, or posted here with origin null)
   * unless an equal or newer one is published; call inside a transaction. A stale one changes nothing.
   */
  *applyDeclaration(declaration: SliceDeclaration, origin: string | null, nowMs: number): Steps<boolean> {
    if (!(yield* this.slices.wouldApply(declaration))) return false;
    yield* this.holdFloorsOf(declaration.node_id, nowMs);
    return yield* this.slices.applyDeclaration(declaration, origin, nowMs);
  }

  *sliceDeclaration(nodeId: string): Steps<SliceDeclaration | null> {
    return yield* this.slices.declarationOf(nodeId);
  }

  *publishSelfSlice(nowMs: number): Steps<void> {
    yield* this.self.publishSelfSlice(nowMs);
  }

  *rememberQuorumSet(qset: QuorumSet): Steps<string> {
    return yield* this.slices.rememberQuorumSet(qset);
  }

  *quorumSetByHash(hash: string): Steps<QuorumSet | undefined> {
    return yield* this.slices.quorumSetByHash(hash);
  }

  /**
   * Stores a verified statement; call inside a transaction. A voter's first statement about an item
   * replaces its published slice by the one it signed, so its bulletin is floored first.
   */
  *storeVote(vote: Vote, origin: string | null, nowMs: number): Steps<StoredVote> {
    const replaced = yield* this.replacedPublishedSlice(vote);
    if (replaced && !(yield* this.options.store.data.votes.hasAnyBy(vote.voter, vote.item)) && (yield* this.selfTallies.acceptersBlock(vote.item, replaced))) {
      yield* this.raiseFloor(vote.item, vote.voter, nowMs);
    }
    return yield* this.log.storeVote(vote, origin, nowMs);
  }

  /**
   * The voter's published slice when the statement, if it is its voter's first about the item, puts
   * another in its place: it declares a slice, and not that one. Otherwise the voter's tally only
   * gains a statement and cannot go down, so its floor need not be held (a full tally per voter's
   * first vote made a round of votes O(n^2) again). The relay node's slice never changes by its
   * statements. Even then, a node that signed nothing about the item ranks above `uncommitted` only
   * when the accepters of a value block its slice (`SelfTallies.acceptersBlock`): only then is
   * there a floor to hold, and only then does its full tally run (decision 1080).
   */
  private *replacedPublishedSlice(vote: Vote): Steps<QuorumSet | undefined> {
    if (vote.voter === this.options.selfKey.nodeId) return undefined;
    const published = yield* this.slices.publishedSlice(vote.voter);
    if (!published) return undefined;
    const declared = vote.slice_hash ?? (vote.slice ? hashOf(vote.slice) : undefined);
    return declared !== undefined && declared !== published.hash ? published.qset : undefined;
  }

  *statements(itemId: string): Steps<readonly Vote[]> {
    return yield* this.log.statements(itemId);
  }

  *selfSlice(): Steps<QuorumSet | undefined> {
    return yield* this.self.selfSlice();
  }

  *retallySelf(itemId: string, nowMs: number): Steps<Emission> {
    return yield* this.self.retallySelf(itemId, nowMs);
  }

  /**
   * Bulletin of `nodeId` for an item: the tally (see `tallyItem`) floored at the highest bulletin the
   * node had at a committed state (`bulletin_floors`). A read never writes: the floor is raised on
   * the write paths, just before the only writes that can lower a tally (a node's published slice
   * changing, and a node's first statement replacing its published slice by the signed one), so a
   * rank the relay could have reported is never lost (design note: a node's rank for an item never
   * goes down). Decision 0401.
   */
  *bulletin(itemId: string, nodeId: string): Steps<RelayBulletin> {
    const floor = yield* this.options.store.data.votes.floorOf(itemId, nodeId);
    if (nodeId === this.options.selfKey.nodeId) {
      // The relay node's own tally is kept up to date vote by vote (issue 18): no pass over the statements.
      const own = yield* this.selfTallies.bulletin(itemId);
      return { ...applyFloor(own.bulletin, floor, own.hasSigned), sliceChangers: own.sliceChangers };
    }
    // Any other node's: the reference tally over every statement, kept until one of its inputs
    // changes (`OtherBulletins`, decision 1080).
    const statements = yield* this.log.statements(itemId);
    const other = yield* this.others.bulletin(itemId, nodeId, statements, yield* this.self.selfSlice());
    return { ...applyFloor(other.bulletin, floor, other.hasSigned), sliceChangers: [...other.sliceChangers] };
  }

  /** Bulletins of other nodes computed by a tally so far (reads with nothing new are lookups), for tests. */
  get otherBulletinTallies(): number {
    return this.others.tallies;
  }

  /** Stores the node's bulletin as its floor when it ranks higher; write paths only, inside their transaction. */
  private *raiseFloor(itemId: string, nodeId: string, nowMs: number): Steps<void> {
    const votes = this.options.store.data.votes;
    // Without a published slice and its own statements a node's tally is `uncommitted`: nothing to hold.
    if (nodeId !== this.options.selfKey.nodeId && !(yield* this.slices.publishedSlice(nodeId))) return;
    const reported = yield* this.bulletin(itemId, nodeId);
    const floor = yield* votes.floorOf(itemId, nodeId);
    if (raisesFloor(reported, floor)) yield* votes.setFloor(itemId, nodeId, { state: reported.state, value: reported.value, acceptedVia: reported.accepted_via }, nowMs);
  }

  /**
   * Before a node's published slice changes: floors its bulletins on the items that slice decides,
   * those where the node signed nothing (else its signed slice counts) and someone accepted (else it
   * is at most `uncommitted` there: no own vote, nothing to be v-blocked by).
   */
  private *holdFloorsOf(nodeId: string, nowMs: number): Steps<void> {
    if (nodeId === this.options.selfKey.nodeId) return; // its tally uses the relay slice, not a published one
    for (const itemId of yield* this.options.store.data.votes.itemsAcceptedWithout(nodeId)) yield* this.raiseFloor(itemId, nodeId, nowMs);
  }
}
