import type { EmittedStatement } from '../../../core/relay/tally.js';
import type { NodeKey } from '../../../core/relay/node-id.js';
import { type QuorumSet, defaultThreshold, normalizeQuorumSet, quorumSetHash } from '../../../core/relay/quorum-set.js';
import { type Vote, signVote } from '../../../core/relay/vote.js';
import { signSliceDeclaration } from '../../../core/relay/slice-declaration.js';
import type { SliceRepository } from '../../storage/relay/slice-repository.js';
import { relayScheme, voteSchema } from '../../../wire/relay/relay-facts.js';
import type { RelayStore } from '../relay-store.js';
import type { Steps } from '../../storage/sql-steps.js';
import { type SliceBook, deepFreeze, sameQuorumSet } from './slice-book.js';
import type { SelfTallies } from './self-tally.js';
import type { StatementLog } from './statement-log.js';

/**
 * What the default relay slice (no configured `selfSlice`) is built from: the operator's word only.
 * Never the nodes that registered here: anyone who can register keys would then decide what the
 * relay accepts and confirms (issue 18; decision 0402).
 */
export interface DefaultSliceSources {
  /** The relay's operators (node ids from its configuration). */
  operators: readonly string[];
  /** Peer URLs from its configuration; their relay nodes count once a probe learned their node ids. */
  configuredPeers: readonly string[];
}

/** Statements the relay's own node signed while re-tallying. */
export type Emission = Vote[];

/**
 * The relay's own node as a voter: its slice (configured, or the default built from its operators
 * and configured peer relays), and the statements it signs when a tally says so.
 */
export class SelfVoter {
  /** The default relay slice last built and the `membership` version it was built at. */
  private defaultSelfSlice: { version: number; qset: QuorumSet | undefined } | undefined;
  private readonly membership: SliceRepository;

  constructor(
    store: RelayStore,
    private readonly slices: SliceBook,
    private readonly log: StatementLog,
    private readonly tallies: SelfTallies,
    private readonly selfKey: NodeKey,
    private readonly configuredSlice: QuorumSet | undefined,
    private readonly trusted: DefaultSliceSources = { operators: [], configuredPeers: [] },
  ) {
    this.membership = store.data.slices;
  }

  forgetCached(): void {
    this.defaultSelfSlice = undefined;
  }

  /**
   * Publishes the configured relay slice as the relay node's declaration, signed with its key (an
   * x.slice/1 statement peers verify), when it changed or was published before declarations were signed (at start).
   */
  *publishSelfSlice(nowMs: number): Steps<void> {
    const configured = this.configuredSlice;
    if (!configured) return;
    const hash = quorumSetHash(configured);
    if ((yield* this.slices.publishedSlice(this.selfKey.nodeId))?.hash === hash && (yield* this.slices.declarationOf(this.selfKey.nodeId)) !== null) return;
    const declaration = signSliceDeclaration({ node_id: this.selfKey.nodeId, slice: configured, updated_ms: nowMs }, this.selfKey.secretKey);
    yield* this.slices.setSlice(this.selfKey.nodeId, normalizeQuorumSet(configured), false, nowMs, declaration);
  }

  /** The relay node's slice now (configured, or the default described in `VotingOptions`). */
  *selfSlice(): Steps<QuorumSet | undefined> {
    if (this.configuredSlice) return this.configuredSlice;
    const version = yield* this.membership.membershipVersion();
    if (this.defaultSelfSlice?.version === version) return this.defaultSelfSlice.qset;
    const members = [...new Set([...this.trusted.operators, ...(yield* this.membership.peerNodeIds(this.trusted.configuredPeers))])].filter((id) => id !== this.selfKey.nodeId).sort();
    const previous = this.defaultSelfSlice?.qset;
    const next: QuorumSet | undefined = members.length === 0 ? undefined : { t: defaultThreshold(members.length), v: members, i: [] };
    // Same members, same object: the core's compiled form of it stays valid.
    const qset = next && previous && sameQuorumSet(previous, next) ? previous : next && deepFreeze(next);
    this.defaultSelfSlice = { version, qset };
    return qset;
  }

  /**
   * Re-tallies as the relay's node and signs, stores and emits (as `vote` events) what the tally
   * says it must, repeating until it says nothing more. Call inside the transaction that stored the
   * triggering statements, so the emission commits with them.
   */
  *retallySelf(itemId: string, nowMs: number): Steps<Emission> {
    const emitted: Vote[] = [];
    // Read once: storing the relay's own statements changes no node or peer, so its slice stays.
    const slice = yield* this.selfSlice();
    // Each round emits at least one new statement, and there are only four (2 values x 2 phases).
    for (let round = 0; round < 4; round++) {
      // The kept tally (`SelfTallies`): each statement stored below updates it.
      const { bulletin } = yield* this.tallies.bulletin(itemId);
      if (bulletin.toEmit.length === 0) break;
      for (const statement of bulletin.toEmit) {
        const vote = this.signOwn(itemId, statement, slice, nowMs);
        yield* this.log.storeVote(vote, null, nowMs);
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
      voter: this.selfKey.nodeId,
      value: statement.value,
      phase: statement.phase,
      ...(slice ? { slice } : {}),
      created_at: Math.floor(nowMs / 1000),
    } as Parameters<typeof signVote>[0];
    return signVote(unsigned, this.selfKey.secretKey);
  }
}
