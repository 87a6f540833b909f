import type { QuorumSet } from '../../../core/relay/quorum-set.js';
import { type Vote, otherValue } from '../../../core/relay/vote.js';
import { BoundedCache } from './bounded-cache.js';
import type { StatementKey, VoteRepository } from '../../storage/relay/vote-repository.js';
import { votePayloadJson } from '../../storage/relay/event-repository.js';
import { type RelayRefusal, invalidInputAt } from './relay-errors.js';
import type { RelayStore } from '../relay-store.js';
import type { Steps } from '../../storage/sql-steps.js';
import { type SliceBook, deepFreeze, sameQuorumSet } from './slice-book.js';
import { hashOf, knowHashOf } from './voting-tally.js';

/** Outcome of storing one verified statement. */
export interface StoredVote {
  stored: boolean;
  duplicate: boolean;
  /** The voter has now signed both values in this phase; both statements are kept as evidence. */
  equivocation: boolean;
  /**
   * A duplicate of a stored statement in another signed document (another `created_at` or slice):
   * kept beside it and published (`MAX_OTHER_DOCUMENTS` per statement), so the slices it declares count.
   */
  keptAnotherDocument?: boolean;
}

/**
 * Other documents kept per (voter, item, value, phase) beyond the first. Every relay that received
 * them keeps them all, in whatever order they came (issue 18, convergence: first-come kept one and
 * two relays then counted different slices); a bound, so a voter cannot grow a statement without end.
 */
export const MAX_OTHER_DOCUMENTS = 3;

/** The refusal of a statement naming a slice_hash this relay never stored (the route checks it before the write path too). */
export function unknownSliceHash(hash: string): RelayRefusal {
  return invalidInputAt(['body'], [{ path: ['slice_hash'], code: 'unknown_slice_hash', input: hash }]);
}

/** Parsed statements the log keeps in memory across its cached items, by default (~0.5-2 KiB each). */
export const MAX_CACHED_STATEMENTS = 200_000;

interface ItemStatements {
  /** mapKey -> the parsed, frozen statement. */
  parsed: Map<string, Vote>;
  /**
   * Every statement in order, with its key; undefined until first read. A new statement is placed
   * in these arrays (an append, usually: O(1), where copying them made a round of votes O(n^2));
   * `frozen` is the copy handed out, made again on the first read after a change.
   */
  ordered: { keys: StatementKey[]; votes: Vote[]; others: Vote[]; frozen: readonly Vote[] | undefined } | undefined;
}

/**
 * Signed statements as received (verified by the caller with the core's `verifyVote`),
 * deduplicated on (voter, item, value, phase), and each item's statements parsed once, frozen and
 * kept in storage order (decision 0053). Statements are written only through here.
 */
export class StatementLog {
  /** voter -> the last inline slice seen in its statements, so equal slices share one object. */
  private readonly inlineSlices: BoundedCache<string, QuorumSet>;
  /** item id -> its statements, parsed once each, and their order (kept up to date by `storeVote`). */
  private readonly items: BoundedCache<string, ItemStatements>;
  private readonly votes: VoteRepository;

  constructor(
    private readonly store: RelayStore,
    private readonly slices: SliceBook,
    sizes: { cachedSlices: number; cachedItems: number; cachedStatements?: number },
    /** Told of every statement stored (parsed back from its stored text), inside the storing transaction. */
    private readonly onStored: (vote: Vote) => Steps<void> = function* () {},
  ) {
    this.votes = store.data.votes;
    this.inlineSlices = new BoundedCache(sizes.cachedSlices);
    this.items = new BoundedCache(sizes.cachedItems);
    this.maxStatements = sizes.cachedStatements ?? MAX_CACHED_STATEMENTS;
  }

  /** Parsed statements the cached items may hold together. */
  private readonly maxStatements: number;

  forgetCached(): void {
    this.inlineSlices.clear();
    this.items.clear();
  }

  /**
   * Stores one verified statement; call inside a transaction. A `slice_hash` must already be known
   * (422 otherwise, so every stored statement can be tallied). Appends a `vote` event when new.
   */
  *storeVote(vote: Vote, origin: string | null, nowMs: number): Steps<StoredVote> {
    // The voter's last inline slice, when this statement carries the same one: stored with that
    // statement (its `qsets` row never goes; a rollback empties this cache), so its hash is known
    // without serialising the slice to look it up (decision 1160).
    const sameSlice = vote.slice ? this.sameInlineSlice(vote.voter, vote.slice) : undefined;
    // An inline slice's hash is handed to its parsed-back copy below, so the tallies never hash it again.
    const inlineHash = sameSlice ? hashOf(sameSlice) : vote.slice ? yield* this.slices.rememberQuorumSet(vote.slice) : undefined;
    if (inlineHash === undefined && vote.slice_hash !== undefined && !(yield* this.slices.quorumSetByHash(vote.slice_hash))) {
      throw unknownSliceHash(vote.slice_hash);
    }
    // Serialised once: the stored text, the parsed-back statement and the event's payload all come from it.
    const text = JSON.stringify(vote);
    const inserted = yield* this.votes.insertIfNew(vote, text, origin, nowMs);
    const equivocation = yield* this.isStored(vote.voter, vote.item, otherValue(vote.value), vote.phase);
    if (!inserted) return { stored: false, duplicate: true, equivocation, keptAnotherDocument: yield* this.keepOtherDocument(vote, text, origin, nowMs) };
    const item = this.items.get(vote.item);
    // What a later read of the stored text would give: a copy, when the statement holds nothing JSON
    // changes and its slice is the one kept (about 1.7 KB less to parse per vote), else parsed back.
    const parsed = sameSlice && isPlainStatement(vote) ? Object.freeze({ ...vote, slice: sameSlice }) : this.shareInlineSlice(JSON.parse(text) as Vote, inlineHash);
    if (item?.ordered) {
      // Placed where the database's ORDER BY puts it (usually last).
      const key: StatementKey = { createdMs: nowMs, voter: vote.voter, value: vote.value, phase: vote.phase };
      item.parsed.set(mapKey(key), parsed);
      const { keys, votes } = item.ordered;
      let at = keys.length;
      while (at > 0 && compareKeys(keys[at - 1] as StatementKey, key) > 0) at--;
      keys.splice(at, 0, key);
      votes.splice(at, 0, parsed);
      item.ordered.frozen = undefined;
      this.trim(vote.item);
    }
    // The event names the statement just stored (on SQLite its document is not written a second time: decision 1170).
    yield* this.store.appendVoteEvent(vote, text, nowMs, origin);
    yield* this.onStored(parsed);
    return { stored: true, duplicate: false, equivocation };
  }

  /**
   * Whether the voter's statement (value, phase) about the item is stored: from the item's kept
   * statements when it holds them all (`ordered`: every statement read at once, and every one stored
   * since placed in it), else read. The kept ones are the database's inside a transaction too: a
   * rollback empties them, and on PostgreSQL so does another replica's commit, noticed when the
   * transaction takes the write lock (decision 0441). One statement fewer per vote (decision 1170).
   */
  private *isStored(voter: string, itemId: string, value: string, phase: string): Steps<boolean> {
    const item = this.items.get(itemId);
    if (item?.ordered) return item.parsed.has(mapKey({ voter, value, phase }));
    return yield* this.votes.has(voter, itemId, value, phase);
  }

  /** Keeps and publishes another signed document of a stored statement (see `MAX_OTHER_DOCUMENTS`). */
  private *keepOtherDocument(vote: Vote, text: string, origin: string | null, nowMs: number): Steps<boolean> {
    if ((yield* this.votes.sigOf(vote)) === vote.sig) return false;
    if ((yield* this.votes.otherDocumentCount(vote)) >= MAX_OTHER_DOCUMENTS) return false;
    if (!(yield* this.votes.insertOtherDocument(vote, text, origin, nowMs))) return false;
    const parsed = this.shareInlineSlice(JSON.parse(text) as Vote);
    const ordered = this.items.get(vote.item)?.ordered;
    if (ordered) {
      ordered.others.push(parsed);
      ordered.frozen = undefined;
    }
    yield* this.store.appendEventJson('vote', vote.voter, vote.item, votePayloadJson(text), nowMs, origin);
    yield* this.onStored(parsed);
    return true;
  }

  /**
   * Every stored statement about an item, oldest first, then the other documents of statements
   * (`keepOtherDocument`). Frozen and shared between calls (an inline slice is the same object
   * while its voter keeps sending the same one): never mutate them. The same list while the item's
   * statements stay the same, a new one after any change and after the caches were emptied, so
   * what is computed from a list may be kept by it (`OtherBulletins`, decision 1080).
   */
  *statements(itemId: string): Steps<readonly Vote[]> {
    let item = this.items.get(itemId);
    if (item?.ordered) return (item.ordered.frozen ??= Object.freeze([...item.ordered.votes, ...item.ordered.others]));
    if (!item) {
      item = { parsed: new Map(), ordered: undefined };
      this.items.set(itemId, item);
    }
    const keys = yield* this.votes.keysOf(itemId);
    const votes: Vote[] = [];
    for (const k of keys) {
      let vote = item.parsed.get(mapKey(k));
      if (!vote) {
        vote = this.shareInlineSlice(JSON.parse(yield* this.votes.docOf(itemId, k)) as Vote);
        item.parsed.set(mapKey(k), vote);
      }
      votes.push(vote);
    }
    const others = (yield* this.votes.otherDocumentsOf(itemId)).map((doc) => this.shareInlineSlice(JSON.parse(doc) as Vote));
    const frozen = Object.freeze([...votes, ...others]);
    item.ordered = { keys, votes, others, frozen };
    this.trim(itemId);
    return frozen;
  }

  /**
   * Forgets the least recently used items' statements (never `keep`'s) while those kept hold more
   * than the bound together: the item count alone let 64 items of a 10 000-voter network hold
   * gigabytes. A forgotten item is read again from the database when next needed.
   */
  private trim(keep: string): void {
    let total = 0;
    for (const [, item] of this.items.entriesOldestFirst()) total += item.ordered?.votes.length ?? 0;
    for (const [itemId, item] of this.items.entriesOldestFirst()) {
      if (total <= this.maxStatements) return;
      if (itemId === keep) continue;
      total -= item.ordered?.votes.length ?? 0;
      this.items.delete(itemId);
    }
  }

  /** The voter's kept inline slice (frozen, shared) when `slice` is equal to it, else undefined. */
  private sameInlineSlice(voter: string, slice: QuorumSet): QuorumSet | undefined {
    const known = this.inlineSlices.get(voter);
    return known && sameQuorumSet(known, slice) ? known : undefined;
  }

  /**
   * Freezes a parsed statement, replacing its inline slice by the voter's previous one when equal.
   * `inlineHash`: the slice's hash when the caller already computed it (a voter's first statement
   * here hashed its slice once to store it, and the tallies would hash the new object again).
   */
  private shareInlineSlice(vote: Vote, inlineHash?: string): Vote {
    if (vote.slice) {
      const known = this.sameInlineSlice(vote.voter, vote.slice);
      if (known) return Object.freeze({ ...vote, slice: known });
      this.inlineSlices.set(vote.voter, deepFreeze(vote.slice));
      if (inlineHash !== undefined) knowHashOf(vote.slice, inlineHash);
    }
    return Object.freeze(vote);
  }
}

/**
 * True when `JSON.parse(JSON.stringify(vote))` would be a plain copy of it, its slice aside: every
 * other field a string or a number JSON writes back as itself (not -0), no hint (anything), no field
 * holding undefined (JSON drops it).
 */
function isPlainStatement(vote: Vote): boolean {
  for (const key of Object.keys(vote)) {
    if (key === 'slice') continue;
    const value = (vote as unknown as Record<string, unknown>)[key];
    if (typeof value === 'string') continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || Object.is(value, -0)) return false;
  }
  return true;
}

function mapKey(k: Omit<StatementKey, 'createdMs'>): string {
  return `${k.voter} ${k.value} ${k.phase}`;
}

/** SQLite's ORDER BY on these columns (TEXT compares bytewise; ids, values and phases are ASCII, so code units agree). */
function compareKeys(a: StatementKey, b: StatementKey): number {
  if (a.createdMs !== b.createdMs) return a.createdMs - b.createdMs;
  for (const field of ['voter', 'value', 'phase'] as const) {
    if (a[field] !== b[field]) return a[field] < b[field] ? -1 : 1;
  }
  return 0;
}
