import type { QuorumSet } from '../../../core/relay/quorum-set.js';
import type { RelayDeps } from '../relay-deps.js';
import { RelayRefusal, invalidInputAt } from '../domain/relay-errors.js';
import { requireSliceDeclaration } from '../domain/signed-statements.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';

/** A node's slice as published. */
export interface PublishedSliceAnswer {
  node_id: string;
  slice_hash: string;
  slice: QuorumSet;
  t_auto: boolean;
}

/** The slice as a change sees it: `t` absent when the relay chose it (the default 67 %). */
type SliceDraft = { v: string[]; i: unknown[]; t?: number };

/**
 * A node's slice: published with its credential (POST /slice, /slice/include, /slice/exclude; on
 * this relay only) or declared with its key (POST /slice/declare, a statement peers verify).
 */
export class Slice {
  constructor(private readonly deps: Pick<RelayDeps, 'store' | 'voting' | 'clock'>) {}

  /** Publishes `nodeId`'s slice as `change` makes it of the current one; the sanity rules hold. */
  change(nodeId: string, change: (current: SliceDraft | undefined) => unknown): Promise<PublishedSliceAnswer> {
    const { store, voting, clock } = this.deps;
    return store.tx(function* () {
      const current = yield* voting.publishedSlice(nodeId);
      const next = change(current ? { ...current.qset, ...(current.t_auto ? { t: undefined } : {}) } : undefined);
      const { qset, tAuto } = voting.parseSlice(stripUndefined(next), nodeId, ['body']);
      const saved = yield* voting.setSlice(nodeId, qset, tAuto, clock.nowMs());
      return { node_id: nodeId, slice_hash: saved.hash, slice: saved.qset, t_auto: tAuto };
    });
  }

  /** Adds `member` to the top level (a 1-node slice when there was none). */
  include(nodeId: string, member: string): Promise<PublishedSliceAnswer> {
    return atMember(
      member,
      this.change(nodeId, (current) => {
        if (!current) return { v: [member], i: [] };
        if (current.v.includes(member)) return current;
        return { ...current, v: [...current.v, member] };
      }),
    );
  }

  /** Removes `member` from the top level; refused when it is not there. */
  exclude(nodeId: string, member: string): Promise<PublishedSliceAnswer> {
    return atMember(
      member,
      this.change(nodeId, (current) => {
        if (!current || !current.v.includes(member)) throw invalidInputAt(['body', 'node_id'], [{ path: [], code: 'not_slice_member', input: member }]);
        // Left with no entry, a slice whose t the relay chose has none: the rule it breaks is the range of t.
        if (current.v.length + current.i.length === 1) throw invalidInputAt(['body', 'node_id'], [{ path: [], code: 'threshold_range', input: member, limit: 0 }]);
        return { ...current, v: current.v.filter((v) => v !== member) };
      }),
    );
  }

  /** Publishes a signed x.slice/1 declaration; the newest `updated_ms` wins. */
  async declare(document: unknown): Promise<PublishedSliceAnswer> {
    const { store, voting, clock } = this.deps;
    const declaration = requireSliceDeclaration(document, ['body']);
    const nowMs = clock.nowMs();
    if (declaration.updated_ms > nowMs + relayLimits.proofMaxSkewSeconds * 1000) {
      throw invalidInputAt(['body'], [{ path: ['updated_ms'], code: 'updated_ms_ahead', limit: relayLimits.proofMaxSkewSeconds, nowMs, input: declaration.updated_ms }]);
    }
    // A node is never unregistered, so this check may run before the transaction.
    if (!(await store.plainData.nodes.exists(declaration.node_id))) throw new RelayRefusal('signer_not_registered', 'node is not a registered node: POST /register first');
    const { slices } = store.data;
    // Written and read back in one transaction: read after it, a newer declaration committed in
    // between (another request, on PostgreSQL another replica) would be answered with this one's hash.
    const outcome = await store.tx(function* () {
      const applied = yield* voting.applyDeclaration(declaration, null, nowMs);
      const current = yield* voting.sliceDeclaration(declaration.node_id);
      if (!applied && current?.sig !== declaration.sig) return { superseded: (yield* slices.declaredAt(declaration.node_id))?.updated_ms ?? '?' };
      return { slice: (yield* voting.publishedSlice(declaration.node_id))!.qset };
    });
    if ('superseded' in outcome) {
      throw new RelayRefusal('declaration_superseded', `a newer declaration of this node's slice is published (updated_ms ${outcome.superseded}); sign one with a later updated_ms`);
    }
    return { node_id: declaration.node_id, slice_hash: declaration.slice_hash, slice: outcome.slice, t_auto: false };
  }
}

/**
 * A refusal of the slice that adding or removing `member` makes, located at what the client sent
 * (`body.node_id`, the member as input): it named `body.v.1` or `body.t`, fields of a body the
 * client never sent. The reason stays the rule's own words.
 */
async function atMember(member: string, changed: Promise<PublishedSliceAnswer>): Promise<PublishedSliceAnswer> {
  try {
    return await changed;
  } catch (err) {
    const input = err instanceof RelayRefusal && err.code === 'invalid_input' ? err.extra.input : undefined;
    if (!input || (input.where.join('.') === 'body.node_id' && input.problems.every((p) => p.path.length === 0))) throw err;
    throw invalidInputAt(['body', 'node_id'], input.problems.map((problem) => ({ ...problem, path: [], input: member })));
  }
}

function stripUndefined(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
}
