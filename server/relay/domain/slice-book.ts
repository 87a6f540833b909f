import { type QuorumSet, defaultThreshold, normalizeQuorumSet, quorumSetHash, validateQuorumSet } from '../../../core/relay/quorum-set.js';
import { type SliceDeclaration, supersedes } from '../../../core/relay/slice-declaration.js';
import type { Vote } from '../../../core/relay/vote.js';
import { BoundedCache } from './bounded-cache.js';
import type { SliceRepository } from '../../storage/relay/slice-repository.js';
import type { RelayStore } from '../relay-store.js';
import type { Steps } from '../../storage/sql-steps.js';
import { throwCoreProblems } from './signed-document.js';

/** A slice a node published (POST /slice or a peer's `slice` event). Frozen: shared between tallies. */
export interface PublishedSlice {
  hash: string;
  qset: QuorumSet;
  t_auto: boolean;
}

/**
 * Published slices and quorum sets by hash, parsed once and cached frozen (decision 0053). Slices
 * are written only through here, so each write drops its cache entry inside its own transaction.
 */
export class SliceBook {
  /** node id -> its published slice, or null when it has none. */
  private readonly published: BoundedCache<string, PublishedSlice | null>;
  /** slice hash -> quorum set; a hash names one content forever, so entries never go stale. */
  private readonly byHash: BoundedCache<string, QuorumSet>;
  /** A quorum set as sent (its JSON text) -> its slice_hash, for sets stored already. */
  private readonly remembered: BoundedCache<string, string>;
  private readonly slices: SliceRepository;
  /**
   * Moves whenever a published slice may have changed: at each write of one (inside its
   * transaction) and when the caches are emptied (a rollback, another replica's commit). What was
   * computed from published slices is kept only while it stays the same (`OtherBulletins`).
   */
  publishedGeneration = 0;

  constructor(
    private readonly store: RelayStore,
    cachedSlices: number,
  ) {
    this.slices = store.data.slices;
    this.published = new BoundedCache(cachedSlices);
    this.byHash = new BoundedCache(cachedSlices);
    this.remembered = new BoundedCache(cachedSlices);
  }

  forgetCached(): void {
    this.publishedGeneration++;
    this.published.clear();
    this.byHash.clear();
    this.remembered.clear();
  }

  /**
   * Reads what a tally over `statements` may look up (`SliceLookups`): the quorum sets their
   * `slice_hash`es name, and the published slices of their voters and of `nodes`.
   */
  *lookupsFor(statements: readonly Vote[], nodes: readonly string[] = [], into: SliceLookups = new SliceLookups()): Steps<SliceLookups> {
    // A voter whose statements declare a slice counts with it; only the others need their published one.
    const declaring = new Set<string>();
    for (const s of statements) {
      if (s.slice) declaring.add(s.voter);
      else if (s.slice_hash !== undefined) {
        if (!into.byHash.has(s.slice_hash)) into.byHash.set(s.slice_hash, yield* this.quorumSetByHash(s.slice_hash));
        if (into.byHash.get(s.slice_hash)) declaring.add(s.voter);
      }
    }
    for (const node of [...statements.map((s) => s.voter), ...nodes]) {
      if (!declaring.has(node) && !into.hasPublished(node)) into.published.set(node, yield* this.publishedSlice(node));
    }
    return into;
  }

  /**
   * Validates a quorum set from a request. `t` may be omitted at any level: it then follows the
   * default threshold (67 % of the entries, rounded up). Refuses it as input (`invalid_input`) located under `loc`.
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
    if (!result.ok) throwCoreProblems(result.problems, loc);
    return { qset: normalizeQuorumSet(result.value), tAuto };
  }

  /** The slice a node published with POST /slice (or learned nowhere: undefined). */
  *publishedSlice(nodeId: string): Steps<PublishedSlice | undefined> {
    const cached = this.published.get(nodeId);
    if (cached !== undefined) return cached ?? undefined;
    const row = yield* this.slices.get(nodeId);
    const slice = row ? deepFreeze({ hash: row.hash, qset: JSON.parse(row.qset) as QuorumSet, t_auto: row.t_auto === 1 }) : null;
    this.published.set(nodeId, slice);
    return slice ?? undefined;
  }

  /**
   * Stores a node's slice and its hash (so votes may carry `slice_hash`); call inside a transaction.
   * `declaration` is the node's signed x.slice/1 statement of it (the relay node signs its own); a
   * slice published without one (POST /slice with a credential) stays this relay's word and peers
   * do not take it as the node's.
   */
  *setSlice(nodeId: string, qset: QuorumSet, tAuto: boolean, nowMs: number, declaration: SliceDeclaration | null = null): Steps<{ hash: string; qset: QuorumSet }> {
    const hash = yield* this.rememberQuorumSet(qset);
    yield* this.slices.put(nodeId, { qsetJson: JSON.stringify(qset), hash, tAuto, declarationJson: declaration && JSON.stringify(declaration) }, declaration?.updated_ms ?? nowMs);
    this.published.delete(nodeId);
    this.publishedGeneration++;
    yield* this.store.appendEvent('slice', nodeId, hash, { node_id: nodeId, slice: qset, slice_hash: hash, updated_ms: declaration?.updated_ms ?? nowMs, declaration }, nowMs);
    return { hash, qset };
  }

  /**
   * True when a verified declaration would replace the node's published slice: none yet, or it is
   * newer (`updated_ms`, ties by the larger hash, so every relay keeps the same one whatever order
   * declarations arrive in).
   */
  *wouldApply(declaration: SliceDeclaration): Steps<boolean> {
    const current = yield* this.slices.declaredAt(declaration.node_id);
    return current === undefined || supersedes(declaration, { updated_ms: current.updated_ms, slice_hash: current.hash });
  }

  /**
   * Publishes a node's verified x.slice/1 declaration (from a peer, `origin` its URL, or posted here,
   * null) when `wouldApply`; returns whether it did. Call inside a transaction. Its event carries the
   * declaration, so the next relay verifies it against the node's key too.
   */
  *applyDeclaration(declaration: SliceDeclaration, origin: string | null, nowMs: number): Steps<boolean> {
    if (!(yield* this.wouldApply(declaration))) return false;
    const qset = normalizeQuorumSet(declaration.slice);
    const hash = yield* this.rememberQuorumSet(qset);
    yield* this.slices.put(declaration.node_id, { qsetJson: JSON.stringify(qset), hash, tAuto: false, declarationJson: JSON.stringify(declaration) }, declaration.updated_ms);
    this.published.delete(declaration.node_id);
    this.publishedGeneration++;
    yield* this.store.appendEvent('slice', declaration.node_id, hash, { node_id: declaration.node_id, slice: qset, slice_hash: hash, updated_ms: declaration.updated_ms, declaration }, nowMs, origin);
    return true;
  }

  /** The node's signed declaration of its published slice, or null (none, or published here without one). */
  *declarationOf(nodeId: string): Steps<SliceDeclaration | null> {
    const json = (yield* this.slices.get(nodeId))?.declaration;
    return json ? (JSON.parse(json) as SliceDeclaration) : null;
  }

  /** Keeps hash -> quorum set so `slice_hash` in votes resolves; returns the hash. */
  *rememberQuorumSet(qset: QuorumSet): Steps<string> {
    // Voters send the same inline slice with each statement: once stored (in a committed or the
    // current transaction; a rollback empties this), its hash is known without hashing or writing.
    const spelled = JSON.stringify(qset);
    const known = this.remembered.get(spelled);
    if (known !== undefined) return known;
    const normal = normalizeQuorumSet(qset);
    const hash = quorumSetHash(normal);
    yield* this.slices.rememberQuorumSet(hash, JSON.stringify(normal));
    this.remembered.set(spelled, hash);
    return hash;
  }

  /** The quorum set a `slice_hash` names (frozen, shared), or undefined when never seen here. */
  *quorumSetByHash(hash: string): Steps<QuorumSet | undefined> {
    const cached = this.byHash.get(hash);
    if (cached) return cached;
    const json = yield* this.slices.quorumSetJson(hash);
    if (json === undefined) return undefined;
    const qset = deepFreeze(JSON.parse(json) as QuorumSet);
    this.byHash.set(hash, qset);
    return qset;
  }
}

/**
 * What a synchronous tally (the core's `tally`, `GrowingTally`) may ask for, read beforehand: the
 * quorum sets the statements name by hash and the published slices of their voters. The tallies
 * call their slice lookups synchronously, in the middle of their arithmetic; a step cannot run there.
 */
export class SliceLookups {
  readonly byHash = new Map<string, QuorumSet | undefined>();
  readonly published = new Map<string, PublishedSlice | undefined>();

  /**
   * `shared`: lookups read first and never written here, so what one read adds (`lookupsFor(..., into)`)
   * goes with it: `OtherBulletins` looks up each read node's slice this way, not in the item's
   * shared lookups, which a client naming ever new nodes would otherwise grow without bound.
   */
  constructor(private readonly shared?: SliceLookups) {}

  /** Whether `nodeId`'s published slice (or its absence) was read into these lookups or the shared ones. */
  hasPublished(nodeId: string): boolean {
    return this.published.has(nodeId) || (this.shared?.hasPublished(nodeId) ?? false);
  }

  /** The quorum set a `slice_hash` names; read by `SliceBook.lookupsFor` (a miss is a slice this relay never stored). */
  quorumSetByHash(hash: string): QuorumSet | undefined {
    return this.shared === undefined || this.byHash.has(hash) ? this.byHash.get(hash) : this.shared.quorumSetByHash(hash);
  }

  publishedSlice(nodeId: string): PublishedSlice | undefined {
    return this.shared === undefined || this.published.has(nodeId) ? this.published.get(nodeId) : this.shared.publishedSlice(nodeId);
  }
}

/** Structural equality of two quorum sets (same threshold, same entries in the same order). */
export function sameQuorumSet(a: QuorumSet, b: QuorumSet): boolean {
  if (a === b) return true;
  if (a.t !== b.t || a.v.length !== b.v.length || a.i.length !== b.i.length) return false;
  for (let k = 0; k < a.v.length; k++) if (a.v[k] !== b.v[k]) return false;
  for (let k = 0; k < a.i.length; k++) if (!sameQuorumSet(a.i[k] as QuorumSet, b.i[k] as QuorumSet)) return false;
  return true;
}

/** Freezes `value` and everything inside it (cached objects are shared; a mutation would corrupt tallies). */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
