import { type QuorumSet, defaultThreshold, normalizeQuorumSet, quorumSetHash, validateQuorumSet } from './protocol.js';
import { BoundedCache } from './bounded-cache.js';
import type { SliceRepository } from './data-access/slice-repository.js';
import type { RelayStore } from './relay-store.js';
import { throwCoreIssues } from './signed-document.js';

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
  private readonly slices: SliceRepository;

  constructor(
    private readonly store: RelayStore,
    cachedSlices: number,
  ) {
    this.slices = store.data.slices;
    this.published = new BoundedCache(cachedSlices);
    this.byHash = new BoundedCache(cachedSlices);
  }

  forgetCached(): void {
    this.published.clear();
    this.byHash.clear();
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
    const row = this.slices.get(nodeId);
    const slice = row ? deepFreeze({ hash: row.hash, qset: JSON.parse(row.qset) as QuorumSet, t_auto: row.t_auto === 1 }) : null;
    this.published.set(nodeId, slice);
    return slice ?? undefined;
  }

  /** Stores a node's slice and its hash (so votes may carry `slice_hash`); call inside a transaction. */
  setSlice(nodeId: string, qset: QuorumSet, tAuto: boolean, nowMs: number): { hash: string; qset: QuorumSet } {
    const hash = this.rememberQuorumSet(qset);
    this.slices.put(nodeId, { qsetJson: JSON.stringify(qset), hash, tAuto }, nowMs);
    this.published.delete(nodeId);
    this.store.appendEvent('slice', nodeId, hash, { node_id: nodeId, slice: qset, slice_hash: hash, updated_ms: nowMs }, nowMs);
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
    const current = this.slices.declaredAt(nodeId);
    if (current && (current.updated_ms > updatedMs || (current.updated_ms === updatedMs && current.hash >= hash))) return false;
    this.slices.put(nodeId, { qsetJson: JSON.stringify(normalizeQuorumSet(qset)), hash, tAuto: false }, updatedMs);
    this.published.delete(nodeId);
    this.store.appendEvent('slice', nodeId, hash, { node_id: nodeId, slice: normalizeQuorumSet(qset), slice_hash: hash, updated_ms: updatedMs }, nowMs, origin);
    return true;
  }

  /** Keeps hash -> quorum set so `slice_hash` in votes resolves; returns the hash. */
  rememberQuorumSet(qset: QuorumSet): string {
    const normal = normalizeQuorumSet(qset);
    const hash = quorumSetHash(normal);
    this.slices.rememberQuorumSet(hash, JSON.stringify(normal));
    return hash;
  }

  /** The quorum set a `slice_hash` names (frozen, shared), or undefined when never seen here. */
  quorumSetByHash(hash: string): QuorumSet | undefined {
    const cached = this.byHash.get(hash);
    if (cached) return cached;
    const json = this.slices.quorumSetJson(hash);
    if (json === undefined) return undefined;
    const qset = deepFreeze(JSON.parse(json) as QuorumSet);
    this.byHash.set(hash, qset);
    return qset;
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
