import type { Clock } from '../../core/clock.js';
import type { Bulletin, NodeKey, QuorumSet, Vote } from './protocol.js';
import { applyFloor, raisesFloor } from './bulletin-floor.js';
import type { RelayStore } from './relay-store.js';
import { SelfVoter, type Emission } from './self-voter.js';
import { type PublishedSlice, SliceBook } from './slice-book.js';
import { StatementLog, type StoredVote } from './statement-log.js';
import { sliceChangers, tallyItem } from './voting-tally.js';

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
   * The relay node's slice. Absent: every node registered here plus every peer relay node, with the
   * default threshold, rebuilt whenever those change (see docs/relay-api.md: operators should set it).
   */
  selfSlice?: QuorumSet;
  /** Entries in each parsed-slice cache (published slices, slices by hash, voters' inline slices); default 4096. */
  cachedSlices?: number;
  /** Items whose parsed statements are kept; default 64. */
  cachedItems?: number;
}

/**
 * Votes, slices and the relay's own participation in scp-s5: one entry point over the slice book
 * (published slices, quorum sets by hash), the statement log (stored statements), the bulletin
 * floor (ranks never go down) and the self-voter (the relay node's slice and statements). The
 * tally itself is the core's `tally`; these parts only feed it stored facts.
 *
 * Parsed slices and statements are cached (decision 0053). Slices and votes are written only
 * through these parts, on the store's one connection, so each write drops what it changes from the
 * caches inside its own transaction, and a rolled back transaction empties them
 * (`RelayStore.onRollback`).
 */
export class Voting {
  private readonly slices: SliceBook;
  private readonly log: StatementLog;
  private readonly self: SelfVoter;

  constructor(private readonly options: VotingOptions) {
    const cachedSlices = options.cachedSlices ?? 4096;
    this.slices = new SliceBook(options.store, cachedSlices);
    this.log = new StatementLog(options.store, this.slices, { cachedSlices, cachedItems: options.cachedItems ?? 64 });
    this.self = new SelfVoter(options.store, this.slices, this.log, options.selfKey, options.selfSlice);
    options.store.onRollback(() => this.forgetCached());
  }

  /** Empties every cache (after a rollback; the next lookups read the database again). */
  forgetCached(): void {
    this.slices.forgetCached();
    this.log.forgetCached();
    this.self.forgetCached();
  }

  parseSlice(input: unknown, owner: string, loc: (string | number)[]): { qset: QuorumSet; tAuto: boolean } {
    return this.slices.parseSlice(input, owner, loc);
  }

  publishedSlice(nodeId: string): PublishedSlice | undefined {
    return this.slices.publishedSlice(nodeId);
  }

  setSlice(nodeId: string, qset: QuorumSet, tAuto: boolean, nowMs: number): { hash: string; qset: QuorumSet } {
    return this.slices.setSlice(nodeId, qset, tAuto, nowMs);
  }

  applyRemoteSlice(nodeId: string, qset: QuorumSet, updatedMs: number, origin: string, nowMs: number): boolean {
    return this.slices.applyRemoteSlice(nodeId, qset, updatedMs, origin, nowMs);
  }

  publishSelfSlice(nowMs: number): void {
    this.self.publishSelfSlice(nowMs);
  }

  rememberQuorumSet(qset: QuorumSet): string {
    return this.slices.rememberQuorumSet(qset);
  }

  quorumSetByHash(hash: string): QuorumSet | undefined {
    return this.slices.quorumSetByHash(hash);
  }

  storeVote(vote: Vote, origin: string | null, nowMs: number): StoredVote {
    return this.log.storeVote(vote, origin, nowMs);
  }

  statements(itemId: string): readonly Vote[] {
    return this.log.statements(itemId);
  }

  selfSlice(): QuorumSet | undefined {
    return this.self.selfSlice();
  }

  retallySelf(itemId: string, nowMs: number): Emission {
    return this.self.retallySelf(itemId, nowMs);
  }

  /**
   * Bulletin of `nodeId` for an item: the tally (see `tallyItem`) floored at the highest bulletin
   * reported before for this node and item (persisted in `bulletin_floors`): a published slice or
   * the default relay slice may still change, and the design note promises that a node's rank for
   * an item never goes down. Reaching a higher rank writes the new floor, inside the caller's
   * transaction when there is one.
   */
  bulletin(itemId: string, nodeId: string): RelayBulletin {
    const votes = this.options.store.data.votes;
    const statements = this.log.statements(itemId);
    const computed = tallyItem({ itemId, nodeId, statements, selfNodeId: this.options.selfKey.nodeId }, this.slices, () => this.self.selfSlice());
    const floor = votes.floorOf(itemId, nodeId);
    const reported = applyFloor(computed, floor, statements, nodeId);
    if (raisesFloor(reported, floor)) {
      votes.setFloor(itemId, nodeId, { state: reported.state, value: reported.value, acceptedVia: reported.accepted_via }, this.options.clock.nowMs());
    }
    return { ...reported, sliceChangers: sliceChangers(statements) };
  }
}
