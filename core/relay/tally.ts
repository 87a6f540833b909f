import { type QuorumSet, blocks, maxQuorum, quorumSetHash } from './quorum-set.js';
import { type Vote, type VotePhase, type VoteValue, otherValue, votePhases } from './vote.js';

/**
 * The scp-s5 tally of node `self` for one item (design note, "Tally of node v for item x"): federated
 * voting of Mazières' SCP paper, section 5, on the yes/no question of the item. A pure function of the
 * stored statements and of what `self` already emitted; it never verifies signatures (verify on ingest).
 *
 * With `VA_p` = voters with any statement for p and `A_p` = voters with `accept` or `confirm` for p
 * (self's emitted statements included):
 * - accepted(p)  = blocks(Q_self, A_p) || (self in VA_p && self in maxQuorum(VA_p + self))
 * - confirmed(p) = accepted(p) && self in maxQuorum(A_p + self)
 * Self first accepts at most one value; a later acceptance of the other value (or self's own
 * statements for both values) makes the bulletin `conflicted`, which is absorbing.
 */
export type BulletinState = 'uncommitted' | 'voted' | 'accepted' | 'confirmed' | 'conflicted';

/** Rank of each state: a node's rank for an item never goes down as statements arrive. */
export const bulletinRank: Readonly<Record<BulletinState, number>> = {
  uncommitted: 0,
  voted: 1,
  accepted: 2,
  confirmed: 3,
  conflicted: 4,
};

export type PhaseCounts = Record<VotePhase, number>;

/** A statement self signed (or must sign) beyond its vote. */
export interface EmittedStatement {
  value: VoteValue;
  phase: 'accept' | 'confirm';
}

/** Everything self has emitted for the item so far; persist it and pass it back on every tally. */
export type Emitted = readonly EmittedStatement[];

export interface TallyInput {
  /** node_id of the node whose bulletin this is. */
  self: string;
  /** Item id; statements about other items are ignored. */
  item: string;
  /** Verified statements, in any order, duplicates allowed. */
  statements: readonly Vote[];
  /** Declared slice of a node, or undefined when unknown (the node then belongs to no quorum). */
  sliceOf: (node: string) => QuorumSet | undefined;
  emitted: Emitted;
}

export interface Bulletin {
  state: BulletinState;
  /** The value voted, accepted or confirmed; null when uncommitted or conflicted. */
  value: VoteValue | null;
  /** Distinct voters per value and phase, over every stored statement for the item. */
  counts: Record<VoteValue, PhaseCounts>;
  /** Which rule accepts `value` now; null when not accepted, or accepted only by self's earlier word. */
  accepted_via: 'quorum' | 'v-blocking' | null;
  /** Voters that signed both values in one phase, sorted. Their statements stay stored as evidence. */
  equivocators: string[];
  /** quorumSetHash of self's slice; null when self has none. */
  slice_hash: string | null;
  /** Statements self must sign and broadcast now, then add to `emitted`. Empty when conflicted. */
  toEmit: EmittedStatement[];
}

type Voters = Record<VoteValue, Record<VotePhase, Set<string>>>;

function emptyVoters(): Voters {
  const phases = () => ({ vote: new Set<string>(), accept: new Set<string>(), confirm: new Set<string>() });
  return { yes: phases(), no: phases() };
}

/** Computes self's bulletin for the item. Pure: same input, same output, whatever the statement order. */
export function tally(input: TallyInput): Bulletin {
  const { self, item } = input;
  // One lookup per node per tally: the three maxQuorum calls then share slice objects (and their
  // compiled forms) even when the caller builds a fresh object on every lookup.
  const slices = new Map<string, QuorumSet | undefined>();
  const sliceOf = (node: string): QuorumSet | undefined => {
    if (slices.has(node)) return slices.get(node);
    const slice = input.sliceOf(node);
    slices.set(node, slice);
    return slice;
  };
  // Deduplicate on (voter, item, value, phase): statements are facts, repeating one adds nothing.
  const voters = emptyVoters();
  for (const s of input.statements) {
    if (s.item === item) voters[s.value][s.phase].add(s.voter);
  }
  for (const e of input.emitted) voters[e.value][e.phase].add(self);

  const counts = {
    yes: { vote: voters.yes.vote.size, accept: voters.yes.accept.size, confirm: voters.yes.confirm.size },
    no: { vote: voters.no.vote.size, accept: voters.no.accept.size, confirm: voters.no.confirm.size },
  };
  const equivocators = new Set<string>();
  for (const phase of votePhases) {
    for (const voter of voters.yes[phase]) if (voters.no[phase].has(voter)) equivocators.add(voter);
  }

  const accepters = (p: VoteValue) => new Set([...voters[p].accept, ...voters[p].confirm]);
  const anyPhase = (p: VoteValue) => new Set([...voters[p].vote, ...accepters(p)]);
  const slice = sliceOf(self);

  // maxQuorum is the expensive part (O(rounds x nodes x slice)); compute each value's rule once.
  const rules = new Map<VoteValue, 'quorum' | 'v-blocking' | null>();
  /** Which rule makes self accept p now, if any. */
  const acceptRule = (p: VoteValue): 'quorum' | 'v-blocking' | null => {
    const known = rules.get(p);
    if (known !== undefined) return known;
    let rule: 'quorum' | 'v-blocking' | null = null;
    if (slice) {
      const va = anyPhase(p);
      if (va.has(self) && maxQuorum(va, sliceOf).has(self)) rule = 'quorum';
      else if (blocks(slice, accepters(p))) rule = 'v-blocking';
    }
    rules.set(p, rule);
    return rule;
  };

  const base = {
    counts,
    equivocators: [...equivocators].sort(),
    slice_hash: slice ? quorumSetHash(slice) : null,
  };
  return decideBulletin(base, {
    signed: (p, phase) => voters[p][phase].has(self),
    acceptRule,
    inConfirmingQuorum: (p) => maxQuorum(accepters(p).add(self), sliceOf).has(self),
  });
}

/** What `decideBulletin` asks of the statements: `tally` answers with closures, `GrowingTally` from sets it keeps. */
export interface BulletinRules {
  /** Whether self signed `phase` for `p`. */
  signed(p: VoteValue, phase: VotePhase): boolean;
  /** Which rule makes self accept `p` now, if any. */
  acceptRule(p: VoteValue): 'quorum' | 'v-blocking' | null;
  /** Whether self is in the largest quorum of the nodes that accepted `p`, self included. */
  inConfirmingQuorum(p: VoteValue): boolean;
}

/**
 * The decision part of the tally, shared by `tally` and `GrowingTally` (which answer the rules
 * from sets they keep up to date): self's state, value, rule and what it must sign next, from what
 * self signed, which rule accepts each value now, and whether self is in a quorum of accepters.
 * Written with plain branches over the two values: `GrowingTally` runs it after every statement,
 * where a closure or an array per call was most of the cost.
 */
export function decideBulletin(base: Pick<Bulletin, 'counts' | 'equivocators' | 'slice_hash'>, rules: BulletinRules): Bulletin {
  const { counts, equivocators, slice_hash } = base;
  const votedYes = rules.signed('yes', 'vote');
  const votedNo = rules.signed('no', 'vote');
  const acceptedYes = rules.signed('yes', 'accept') || rules.signed('yes', 'confirm');
  const acceptedNo = rules.signed('no', 'accept') || rules.signed('no', 'confirm');

  // Self's own word for both sides means its quorum-intersection assumption is already broken.
  if ((votedYes && votedNo) || (acceptedYes && acceptedNo)) return conflictedBulletin(base);

  let accepted: VoteValue | undefined = acceptedYes ? 'yes' : acceptedNo ? 'no' : undefined;
  const toEmit: EmittedStatement[] = [];
  if (accepted !== undefined) {
    if (rules.acceptRule(otherValue(accepted)) !== null) return conflictedBulletin(base);
  } else {
    const yes = rules.acceptRule('yes') !== null;
    const no = rules.acceptRule('no') !== null;
    if (yes && no) return conflictedBulletin(base);
    accepted = yes ? 'yes' : no ? 'no' : undefined;
    if (accepted !== undefined) toEmit.push({ value: accepted, phase: 'accept' });
  }

  if (accepted === undefined) {
    const vote: VoteValue | null = votedYes ? 'yes' : votedNo ? 'no' : null;
    return { counts, equivocators, slice_hash, state: vote === null ? 'uncommitted' : 'voted', value: vote, accepted_via: null, toEmit };
  }

  const confirmedBefore = rules.signed(accepted, 'confirm');
  const confirmed = confirmedBefore || rules.inConfirmingQuorum(accepted);
  if (confirmed && !confirmedBefore) toEmit.push({ value: accepted, phase: 'confirm' });
  return {
    counts,
    equivocators,
    slice_hash,
    state: confirmed ? 'confirmed' : 'accepted',
    value: accepted,
    accepted_via: rules.acceptRule(accepted),
    toEmit,
  };
}

function conflictedBulletin(base: Pick<Bulletin, 'counts' | 'equivocators' | 'slice_hash'>): Bulletin {
  return { counts: base.counts, equivocators: base.equivocators, slice_hash: base.slice_hash, state: 'conflicted', value: null, accepted_via: null, toEmit: [] };
}
