import type { Statement } from 'better-sqlite3';
import type { Clock } from '../../core/clock.js';
import {
  type Bulletin,
  type BulletinState,
  type EmittedStatement,
  type QuorumSet,
  type Vote,
  type VoteValue,
  bulletinRank,
  defaultThreshold,
  normalizeQuorumSet,
  quorumSetHash,
  signVote,
  tally,
  validateQuorumSet,
} from './protocol.js';
import type { NodeKey } from './protocol.js';
import { BoundedCache } from './bounded-cache.js';
import { invalidInput } from './relay-error.js';
import { relayScheme, voteSchema } from './relay-facts.js';
import type { RelayStore } from './relay-store.js';
import { throwCoreIssues } from './signed-document.js';

/** Outcome of storing one verified statement. */
export interface StoredVote {
  stored: boolean;
  duplicate: boolean;
  /** The voter has now signed both values in this phase; both statements are kept as evidence. */
  equivocation: boolean;
}

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

/** Statements the relay's own node signed while re-tallying. */
export type Emission = Vote[];

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

/** A slice a node published (POST /slice or a peer's `slice` event). Frozen: shared between tallies. */
export interface PublishedSlice {
  hash: string;
  qset: QuorumSet;
  t_auto: boolean;
}

/**
 * Votes, slices and the relay's own participation in scp-s5. Statements are stored as received
 * (verified by the caller with the core's `verifyVote`), deduplicated on (voter, item, value,
 * phase). The tally itself is the core's `tally`; this class only feeds it stored facts and
 * signs and stores what it says the relay's node must emit.
 *
 * Parsed slices and statements are cached, because the core compiles a slice once per object
 * (quorum-set.ts, `maxQuorum`): a tally that re-parsed them from the database on every lookup cost
 * ten times the tally itself at 1000 nodes. Every cached object is frozen and reused between
 * tallies. Slices and votes are written only through this class, on the store's one connection,
 * so each write drops what it changes from the caches inside its own transaction, and a rolled
 * back transaction empties them (`RelayStore.onRollback`).
 */
export class Voting {
  /** node id -> its published slice, or null when it has none. */
  private readonly published: BoundedCache<string, PublishedSlice | null>;
  /** slice hash -> quorum set; a hash names one content forever, so entries never go stale. */
  private readonly byHash: BoundedCache<string, QuorumSet>;
  /** voter -> the last inline slice seen in its statements, so equal slices share one object. */
  private readonly inlineSlices: BoundedCache<string, QuorumSet>;
  /** item id -> its statements, parsed once each, and their order (kept up to date by `storeVote`). */
  private readonly items: BoundedCache<string, ItemStatements>;
  /** The default relay slice last built and the `membership` version it was built at. */
  private defaultSelfSlice: { version: number; qset: QuorumSet | undefined } | undefined;

  constructor(private readonly options: VotingOptions) {
    const slices = options.cachedSlices ?? 4096;
    this.published = new BoundedCache(slices);
    this.byHash = new BoundedCache(slices);
    this.inlineSlices = new BoundedCache(slices);
    this.items = new BoundedCache(options.cachedItems ?? 64);
    options.store.onRollback(() => this.forgetCached());
  }

  /** Empties every cache (after a rollback; the next lookups read the database again). */
  forgetCached(): void {
    this.published.clear();
    this.byHash.clear();
    this.inlineSlices.clear();
    this.items.clear();
    this.defaultSelfSlice = undefined;
  }

  /** Prepared statements by SQL text: preparing costs more than running these small queries. */
  private readonly prepared = new Map<string, Statement>();

  private sql(text: string): Statement {
    let statement = this.prepared.get(text);
    if (!statement) {
      statement = this.options.store.db.prepare(text);
      this.prepared.set(text, statement);
    }
    return statement;
  }

  /**
   * Validates a quorum set from a request. `t` may be omitted at any level: it then follows the
   * default threshold (67 % of the entries, rounded up). Throws 422 located under `loc`.
   */
  parseSlice(input: unknown, owner: string, loc: (string | number)[]): { qset: QuorumSet; tAuto: boolean } {
    let tAuto = false;
    const fill = (q: unknown): unknown => {
      if (q === null || typeof q !== 'object' || Array.isArray(q)) return q;
      const o = { ...(q as Record<string, unknown>) };
      if (o.v === undefined) o.v = [];
      if (o.i === undefined) o.i = [];
      if (Array.isArray(o.i)) o.i = o.i.map(fill);
      if (o.t === undefined && Array.isArray(o.v) && Array.isArray(o.i)) {
        const n = o.v.length + o.i.length;
        if (n >= 1) {
          o.t = defaultThreshold(n);
          if (q === input) tAuto = true;
        }
      }
      return o;
    };
    const result = validateQuorumSet(fill(input), { self: owner });
    if (!result.ok) throwCoreIssues(result.issues, loc);
    return { qset: normalizeQuorumSet(result.value), tAuto };
  }

  /** The slice a node published with POST /slice (or learned nowhere: undefined). */
  publishedSlice(nodeId: string): PublishedSlice | undefined {
    const cached = this.published.get(nodeId);
    if (cached !== undefined) return cached ?? undefined;
    const row = this.sql('SELECT qset, hash, t_auto FROM slices WHERE node_id = ?').get(nodeId) as { qset: string; hash: string; t_auto: number } | undefined;
    const slice = row ? deepFreeze({ hash: row.hash, qset: JSON.parse(row.qset) as QuorumSet, t_auto: row.t_auto === 1 }) : null;
    this.published.set(nodeId, slice);
    return slice ?? undefined;
  }

  /** Stores a node's slice and its hash (so votes may carry `slice_hash`); call inside a transaction. */
  setSlice(nodeId: string, qset: QuorumSet, tAuto: boolean, nowMs: number): { hash: string; qset: QuorumSet } {
    const hash = this.rememberQuorumSet(qset);
    this.sql('INSERT INTO slices (node_id, qset, hash, t_auto, updated_ms) VALUES (?, ?, ?, ?, ?) ON CONFLICT (node_id) DO UPDATE SET qset = excluded.qset, hash = excluded.hash, t_auto = excluded.t_auto, updated_ms = excluded.updated_ms')
      .run(nodeId, JSON.stringify(qset), hash, tAuto ? 1 : 0, nowMs);
    this.published.delete(nodeId);
    this.options.store.appendEvent('slice', nodeId, hash, { node_id: nodeId, slice: qset, slice_hash: hash, updated_ms: nowMs }, nowMs);
    return { hash, qset };
  }

  /**
   * Applies a slice declaration pulled from a peer (last writer wins on `updatedMs`, ties broken by
   * hash so every relay picks the same one); returns whether it changed anything. Call inside a
   * transaction. Declarations are trusted from peers as item authorship is; a tally prefers the
   * signed slice inside a node's own statements wherever it has voted.
   */
  applyRemoteSlice(nodeId: string, qset: QuorumSet, updatedMs: number, origin: string, nowMs: number): boolean {
    const hash = this.rememberQuorumSet(qset);
    const current = this.sql('SELECT hash, updated_ms FROM slices WHERE node_id = ?').get(nodeId) as { hash: string; updated_ms: number } | undefined;
    if (current && (current.updated_ms > updatedMs || (current.updated_ms === updatedMs && current.hash >= hash))) return false;
    this.sql('INSERT INTO slices (node_id, qset, hash, t_auto, updated_ms) VALUES (?, ?, ?, 0, ?) ON CONFLICT (node_id) DO UPDATE SET qset = excluded.qset, hash = excluded.hash, t_auto = 0, updated_ms = excluded.updated_ms')
      .run(nodeId, JSON.stringify(normalizeQuorumSet(qset)), hash, updatedMs);
    this.published.delete(nodeId);
    this.options.store.appendEvent('slice', nodeId, hash, { node_id: nodeId, slice: normalizeQuorumSet(qset), slice_hash: hash, updated_ms: updatedMs }, nowMs, origin);
    return true;
  }

  /** Publishes the configured relay slice as the relay node's declaration when it changed (at start). */
  publishSelfSlice(nowMs: number): void {
    const configured = this.options.selfSlice;
    if (!configured) return;
    const hash = quorumSetHash(configured);
    if (this.publishedSlice(this.options.selfKey.nodeId)?.hash === hash) return;
    this.setSlice(this.options.selfKey.nodeId, normalizeQuorumSet(configured), false, nowMs);
  }

  /** Keeps hash -> quorum set so `slice_hash` in votes resolves; returns the hash. */
  rememberQuorumSet(qset: QuorumSet): string {
    const normal = normalizeQuorumSet(qset);
    const hash = quorumSetHash(normal);
    this.sql('INSERT OR IGNORE INTO qsets (hash, qset) VALUES (?, ?)').run(hash, JSON.stringify(normal));
    return hash;
  }

  /** The quorum set a `slice_hash` names (frozen, shared), or undefined when never seen here. */
  quorumSetByHash(hash: string): QuorumSet | undefined {
    const cached = this.byHash.get(hash);
    if (cached) return cached;
    const row = this.sql('SELECT qset FROM qsets WHERE hash = ?').get(hash) as { qset: string } | undefined;
    if (!row) return undefined;
    const qset = deepFreeze(JSON.parse(row.qset) as QuorumSet);
    this.byHash.set(hash, qset);
    return qset;
  }

  /**
   * Stores one verified statement; call inside a transaction. A `slice_hash` must already be known
   * (422 otherwise, so every stored statement can be tallied). Appends a `vote` event when new.
   */
  storeVote(vote: Vote, origin: string | null, nowMs: number): StoredVote {
    if (vote.slice) this.rememberQuorumSet(vote.slice);
    else if (vote.slice_hash !== undefined && !this.quorumSetByHash(vote.slice_hash)) {
      throw invalidInput(['body', 'slice_hash'], 'Value error, unknown slice_hash: publish the slice with POST /slice first, or send slice instead', vote.slice_hash);
    }
    const info = this.sql('INSERT OR IGNORE INTO votes (voter, item_id, value, phase, doc, origin, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(vote.voter, vote.item, vote.value, vote.phase, JSON.stringify(vote), origin, nowMs);
    const other = vote.value === 'yes' ? 'no' : 'yes';
    const equivocation = this.sql('SELECT 1 FROM votes WHERE voter = ? AND item_id = ? AND value = ? AND phase = ?').get(vote.voter, vote.item, other, vote.phase) !== undefined;
    if (info.changes === 0) return { stored: false, duplicate: true, equivocation };
    const item = this.items.get(vote.item);
    if (item?.ordered) {
      // Placed where the database's ORDER BY puts it (usually last); parsed back from the stored text.
      const key: StatementKey = { createdMs: nowMs, voter: vote.voter, value: vote.value, phase: vote.phase };
      const parsed = this.shareInlineSlice(JSON.parse(JSON.stringify(vote)) as Vote);
      item.parsed.set(mapKey(key), parsed);
      const { keys, votes } = item.ordered;
      let at = keys.length;
      while (at > 0 && compareKeys(keys[at - 1] as StatementKey, key) > 0) at--;
      item.ordered = { keys: [...keys.slice(0, at), key, ...keys.slice(at)], votes: Object.freeze([...votes.slice(0, at), parsed, ...votes.slice(at)]) };
    }
    this.options.store.appendEvent('vote', vote.voter, vote.item, { vote }, nowMs, origin);
    return { stored: true, duplicate: false, equivocation };
  }

  /**
   * Every stored statement about an item, oldest first. Frozen and shared between calls (an inline
   * slice is the same object while its voter keeps sending the same one): never mutate them.
   */
  statements(itemId: string): readonly Vote[] {
    let item = this.items.get(itemId);
    if (item?.ordered) return item.ordered.votes;
    if (!item) {
      item = { parsed: new Map(), ordered: undefined };
      this.items.set(itemId, item);
    }
    const keys = this.sql('SELECT created_ms AS createdMs, voter, value, phase FROM votes WHERE item_id = ? ORDER BY created_ms, voter, value, phase').all(itemId) as StatementKey[];
    const docOf = this.sql('SELECT doc FROM votes WHERE voter = ? AND item_id = ? AND value = ? AND phase = ?').pluck();
    const votes: Vote[] = [];
    for (const k of keys) {
      let vote = item.parsed.get(mapKey(k));
      if (!vote) {
        vote = this.shareInlineSlice(JSON.parse(docOf.get(k.voter, itemId, k.value, k.phase) as string) as Vote);
        item.parsed.set(mapKey(k), vote);
      }
      votes.push(vote);
    }
    item.ordered = { keys, votes: Object.freeze(votes) };
    return item.ordered.votes;
  }

  /** Freezes a parsed statement, replacing its inline slice by the voter's previous one when equal. */
  private shareInlineSlice(vote: Vote): Vote {
    if (vote.slice) {
      const known = this.inlineSlices.get(vote.voter);
      if (known && sameQuorumSet(known, vote.slice)) return Object.freeze({ ...vote, slice: known });
      this.inlineSlices.set(vote.voter, deepFreeze(vote.slice));
    }
    return Object.freeze(vote);
  }

  /** The relay node's slice now (configured, or the default described in `VotingOptions`). */
  selfSlice(): QuorumSet | undefined {
    if (this.options.selfSlice) return this.options.selfSlice;
    const version = this.sql('SELECT version FROM membership WHERE id = 1').pluck().get() as number;
    if (this.defaultSelfSlice?.version === version) return this.defaultSelfSlice.qset;
    const self = this.options.selfKey.nodeId;
    const members = this.sql('SELECT node_id FROM nodes WHERE (local = 1 OR node_id IN (SELECT node_id FROM peers WHERE node_id IS NOT NULL)) AND node_id != ? ORDER BY node_id LIMIT 1000')
      .pluck()
      .all(self) as string[];
    const previous = this.defaultSelfSlice?.qset;
    const next: QuorumSet | undefined = members.length === 0 ? undefined : { t: defaultThreshold(members.length), v: members, i: [] };
    // Same members, same object: the core's compiled form of it stays valid.
    const qset = next && previous && sameQuorumSet(previous, next) ? previous : next && deepFreeze(next);
    this.defaultSelfSlice = { version, qset };
    return qset;
  }

  /**
   * Bulletin of `nodeId` for an item: the core tally over every stored statement, where a node's
   * slice is the one in its first stored statement about the item (signed, and fixed from then on,
   * so a later statement cannot pull the node out of a quorum it already counted in), else the one
   * it published here; the relay node's own slice is its configured one.
   *
   * The result is floored at the highest bulletin reported before for this node and item (persisted
   * in `bulletin_floors`): a published slice or the default relay slice may still change, and the
   * design note promises that a node's rank for an item never goes down. Reaching a higher rank
   * writes the new floor, inside the caller's transaction when there is one.
   */
  bulletin(itemId: string, nodeId: string): RelayBulletin {
    const statements = this.statements(itemId);
    const computed = this.tallyWith(itemId, nodeId, () => this.selfSlice());
    const floor = this.sql('SELECT state, value, accepted_via AS acceptedVia FROM bulletin_floors WHERE item_id = ? AND node_id = ?').get(itemId, nodeId) as Floor | undefined;
    const reported = applyFloor(computed, floor, statements, nodeId);
    if (bulletinRank[reported.state] > (floor ? bulletinRank[floor.state] : 0)) {
      this.sql('INSERT INTO bulletin_floors (item_id, node_id, state, value, accepted_via, updated_ms) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (item_id, node_id) DO UPDATE SET state = excluded.state, value = excluded.value, accepted_via = excluded.accepted_via, updated_ms = excluded.updated_ms')
        .run(itemId, nodeId, reported.state, reported.value, reported.accepted_via, this.options.clock.nowMs());
    }
    return { ...reported, sliceChangers: this.sliceChangers(statements) };
  }

  /** Voters with statements under more than one slice (compared by content), sorted. */
  private sliceChangers(statements: readonly Vote[]): string[] {
    const first = new Map<string, Vote>();
    const changers = new Set<string>();
    for (const s of statements) {
      const seen = first.get(s.voter);
      if (!seen) first.set(s.voter, s);
      else if (!changers.has(s.voter) && !this.sameDeclaredSlice(seen, s)) changers.add(s.voter);
    }
    return [...changers].sort();
  }

  /** Whether two statements declare the same slice (inline or by hash). */
  private sameDeclaredSlice(a: Vote, b: Vote): boolean {
    if (a.slice && b.slice) return sameQuorumSet(a.slice, b.slice);
    if (a.slice_hash !== undefined && b.slice_hash !== undefined) return a.slice_hash === b.slice_hash;
    const hashOf = (s: Vote) => s.slice_hash ?? (s.slice ? quorumSetHash(s.slice) : undefined);
    return hashOf(a) === hashOf(b);
  }

  private tallyWith(itemId: string, nodeId: string, relaySlice: () => QuorumSet | undefined): Bulletin {
    const statements = this.statements(itemId);
    return tally({ self: nodeId, item: itemId, statements, sliceOf: this.sliceResolver(statements, relaySlice), emitted: emittedBy(statements, nodeId) });
  }

  /**
   * Re-tallies as the relay's node and signs, stores and emits (as `vote` events) what the tally
   * says it must, repeating until it says nothing more. Call inside the transaction that stored the
   * triggering statements, so the emission commits with them.
   */
  retallySelf(itemId: string, nowMs: number): Emission {
    const self = this.options.selfKey;
    const emitted: Vote[] = [];
    // Read once: storing the relay's own statements changes no node or peer, so its slice stays.
    const slice = this.selfSlice();
    // Each round emits at least one new statement, and there are only four (2 values x 2 phases).
    for (let round = 0; round < 4; round++) {
      const bulletin = this.tallyWith(itemId, self.nodeId, () => slice);
      if (bulletin.toEmit.length === 0) break;
      for (const statement of bulletin.toEmit) {
        const vote = this.signOwn(itemId, statement, slice, nowMs);
        this.storeVote(vote, null, nowMs);
        emitted.push(vote);
      }
    }
    return emitted;
  }

  private signOwn(itemId: string, statement: EmittedStatement, slice: QuorumSet | undefined, nowMs: number): Vote {
    const unsigned = {
      schema: voteSchema,
      scheme: relayScheme,
      item: itemId,
      voter: this.options.selfKey.nodeId,
      value: statement.value,
      phase: statement.phase,
      ...(slice ? { slice } : {}),
      created_at: Math.floor(nowMs / 1000),
    } as Parameters<typeof signVote>[0];
    return signVote(unsigned, this.options.selfKey.secretKey);
  }

  private sliceResolver(statements: readonly Vote[], relaySlice: () => QuorumSet | undefined): (node: string) => QuorumSet | undefined {
    // A voter's slice for the item is the one in its first stored statement (the list is in storage
    // order). The newest one used to win, which let a later statement with another slice withdraw
    // the voter from a quorum other nodes had already accepted through: their rank went down.
    const first = new Map<string, Vote>();
    for (const s of statements) if (!first.has(s.voter)) first.set(s.voter, s);
    const cache = new Map<string, QuorumSet | undefined>();
    return (node) => {
      if (cache.has(node)) return cache.get(node);
      let q: QuorumSet | undefined;
      if (node === this.options.selfKey.nodeId) q = relaySlice();
      else {
        const s = first.get(node);
        if (s?.slice) q = s.slice;
        else if (s?.slice_hash !== undefined) q = this.quorumSetByHash(s.slice_hash);
        q ??= this.publishedSlice(node)?.qset;
      }
      cache.set(node, q);
      return q;
    };
  }
}

/** Where a statement sits in an item's list: the order of `statements()` (created_ms, voter, value, phase). */
interface StatementKey {
  createdMs: number;
  voter: string;
  value: string;
  phase: string;
}

interface ItemStatements {
  /** mapKey -> the parsed, frozen statement. */
  parsed: Map<string, Vote>;
  /** Every statement in order, with its key; undefined until first read. */
  ordered: { keys: StatementKey[]; votes: readonly Vote[] } | undefined;
}

function mapKey(k: StatementKey): string {
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

/** Structural equality of two quorum sets (same threshold, same entries in the same order). */
function sameQuorumSet(a: QuorumSet, b: QuorumSet): boolean {
  if (a === b) return true;
  if (a.t !== b.t || a.v.length !== b.v.length || a.i.length !== b.i.length) return false;
  for (let k = 0; k < a.v.length; k++) if (a.v[k] !== b.v[k]) return false;
  for (let k = 0; k < a.i.length; k++) if (!sameQuorumSet(a.i[k] as QuorumSet, b.i[k] as QuorumSet)) return false;
  return true;
}

/** Freezes `value` and everything inside it (cached objects are shared; a mutation would corrupt tallies). */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

/** What `nodeId` already signed beyond its vote, the tally's `emitted`. */
function emittedBy(statements: readonly Vote[], nodeId: string): EmittedStatement[] {
  const out: EmittedStatement[] = [];
  for (const s of statements) {
    if (s.voter === nodeId && s.phase !== 'vote') out.push({ value: s.value, phase: s.phase });
  }
  return out;
}

/** The highest bulletin reported for a node and item (a row of `bulletin_floors`). */
interface Floor {
  state: BulletinState;
  value: VoteValue | null;
  acceptedVia: 'quorum' | 'v-blocking' | null;
}

/**
 * The computed bulletin, never below `floor`. Both at accepted or above for different values is
 * `conflicted` (the node would have accepted both sides). A floored bulletin asks the node to sign
 * what the floor implies and it has not signed yet.
 */
function applyFloor(computed: Bulletin, floor: Floor | undefined, statements: readonly Vote[], nodeId: string): Bulletin {
  if (!floor || computed.state === 'conflicted') return computed;
  const accepted = bulletinRank.accepted;
  const floorRank = bulletinRank[floor.state];
  const computedRank = bulletinRank[computed.state];
  if (floor.state === 'conflicted' || (floorRank >= accepted && computedRank >= accepted && floor.value !== computed.value)) {
    return { ...computed, state: 'conflicted', value: null, accepted_via: null, toEmit: [] };
  }
  if (computedRank >= floorRank) return computed;
  const toEmit: EmittedStatement[] = [];
  if (floor.value !== null && floorRank >= accepted) {
    const signed = (phase: 'accept' | 'confirm') => statements.some((s) => s.voter === nodeId && s.value === floor.value && s.phase === phase);
    if (!signed('accept') && !signed('confirm')) toEmit.push({ value: floor.value, phase: 'accept' });
    if (floor.state === 'confirmed' && !signed('confirm')) toEmit.push({ value: floor.value, phase: 'confirm' });
  }
  return { ...computed, state: floor.state, value: floor.value, accepted_via: floor.acceptedVia, toEmit };
}
