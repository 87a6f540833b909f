import type { Bulletin } from '../../../core/relay/tally.js';
import type { QuorumSet } from '../../../core/relay/quorum-set.js';
import type { Vote } from '../../../core/relay/vote.js';
import { BoundedCache } from './bounded-cache.js';
import type { HasSigned } from './bulletin-floor.js';
import type { Steps } from '../../storage/sql-steps.js';
import { type SliceBook, SliceLookups, deepFreeze } from './slice-book.js';
import { type ItemFacts, itemFacts, sliceChangers, tallyOver } from './voting-tally.js';

/** A node's computed bulletin (not floored) and what the floor and the answer need beside it. */
export interface OtherBulletin {
  bulletin: Bulletin;
  hasSigned: HasSigned;
  /** Voters whose statements about the item declare more than one slice, sorted. */
  sliceChangers: readonly string[];
}

/**
 * Nodes whose computed bulletins are kept per item, by default (~0.5 KiB each: with the statement
 * log's 64 items, ~32 MB at most). Nothing else kept grows with the nodes read: a read node's own
 * published slice is looked up for that read only (the shared lookups hold the voters' alone), so
 * a client reading more nodes' bulletins than this in turn makes each read a tally again, never
 * more memory.
 */
export const NODES_PER_ITEM = 1024;

/** What the bulletins of one list of statements share, and the bulletins computed from it. */
interface ItemReading {
  /** `SliceBook.publishedGeneration` and the relay node's slice they were computed with. */
  generation: number;
  relaySlice: QuorumSet | undefined;
  /** The voters' published slices and the quorum sets named by hash: only the statements', never a read node's. */
  lookups: SliceLookups;
  facts: ItemFacts;
  sliceChangers: readonly string[];
  /** The first bulletin's equivocators, shared by the others (the same for every node: they depend on the statements only). */
  equivocators: string[] | undefined;
  nodes: BoundedCache<string, Bulletin>;
}

/**
 * Bulletins of nodes other than the relay's (GET /items/{id}/bulletin/{node}), as the reference
 * tally computes them (`tallyItem`), kept so that a read with nothing new is a lookup, not a pass
 * over every statement of the item and its quorums (decision 1080).
 *
 * Kept per list of statements: `StatementLog.statements` hands out the same frozen list while the
 * item's statements stay the same and a new one after any change, and after its caches were
 * emptied (a rollback, another replica's commit: decision 0441). So a WeakMap keyed by the list is
 * dropped by the relay's existing invalidation, holds nothing the log has let go, and needs no
 * count or generation of statements of its own. The other inputs of a tally are checked on each
 * read: the published slices (`SliceBook.publishedGeneration`) and the relay node's slice (by
 * object, as the kept tally does). The floor is not kept: the caller reads and applies it.
 */
export class OtherBulletins {
  private readonly items = new WeakMap<readonly Vote[], ItemReading>();
  /** Bulletins computed by a tally so far (each a pass over the item's statements); tests count them. */
  tallies = 0;

  constructor(
    private readonly selfNodeId: string,
    private readonly slices: SliceBook,
    private readonly nodesPerItem = NODES_PER_ITEM,
  ) {}

  /** `nodeId`'s bulletin over `statements` (the item's, from the statement log), not floored. */
  *bulletin(itemId: string, nodeId: string, statements: readonly Vote[], relaySlice: QuorumSet | undefined): Steps<OtherBulletin> {
    const generation = this.slices.publishedGeneration;
    let item = this.items.get(statements);
    if (!item || item.generation !== generation || item.relaySlice !== relaySlice) {
      const lookups = yield* this.slices.lookupsFor(statements);
      item = { generation, relaySlice, lookups, facts: itemFacts(statements, lookups), sliceChangers: Object.freeze(sliceChangers(statements)), equivocators: undefined, nodes: new BoundedCache(this.nodesPerItem) };
    }
    const reading = item;
    let bulletin = reading.nodes.get(nodeId);
    if (!bulletin) {
      // The node's own published slice is read into lookups of this read only, over the shared ones
      // (a tally asks only for the slices of the item's voters and of its own node): kept in the
      // shared ones, each new node a client names would stay there as long as the list does.
      const lookups = yield* this.slices.lookupsFor([], [nodeId], new SliceLookups(reading.lookups));
      bulletin = this.shareEquivocators(reading, tallyOver(reading.facts, { itemId, nodeId, selfNodeId: this.selfNodeId }, lookups, () => relaySlice));
      this.tallies++;
      // Kept only when no published slice moved while the lookups waited for the database.
      if (this.slices.publishedGeneration === generation) {
        reading.nodes.set(nodeId, bulletin);
        this.items.set(statements, reading);
      }
    }
    const own = reading.facts.byVoter.get(nodeId) ?? [];
    return { bulletin, hasSigned: (value, phase) => own.some((s) => s.value === value && s.phase === phase), sliceChangers: reading.sliceChangers };
  }

  /** The bulletin, frozen (it is shared between reads), its equivocators the item's one list when equal. */
  private shareEquivocators(reading: ItemReading, bulletin: Bulletin): Bulletin {
    const shared = reading.equivocators;
    if (shared === undefined) reading.equivocators = bulletin.equivocators;
    else if (shared !== bulletin.equivocators && sameStrings(shared, bulletin.equivocators)) return deepFreeze({ ...bulletin, equivocators: shared });
    return deepFreeze(bulletin);
  }
}

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((s, k) => s === b[k]);
}
