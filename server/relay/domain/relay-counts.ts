import { RelayError as CoreRelayError } from '../../../core/relay/problem.js';
import type { StoredVote } from './statement-log.js';
import { RelayRefusal } from './relay-errors.js';

/** What a vote taken by POST /items/{id}/vote did: a new statement, one kept as evidence of equivocation, or a duplicate (idempotent). */
export const VOTE_OUTCOMES = ['stored', 'equivocation', 'duplicate'] as const;
export type VoteOutcomeClass = (typeof VOTE_OUTCOMES)[number];

/**
 * Why a vote was refused, in classes an operator acts on (a bounded label: never an item or a node
 * id). `bad_signature` rising: forged or corrupted votes; `clock_ahead`: clients (or this relay)
 * with a wrong clock; `unregistered_voter`: clients voting before POST /register; `unknown_slice`:
 * a slice_hash never published here; `wrong_item`: the body's item is not the path's; `malformed`:
 * any other broken input (shape, ids); `other`: any other refusal.
 */
export const VOTE_REFUSALS = ['unknown_item', 'malformed', 'wrong_item', 'clock_ahead', 'bad_signature', 'unregistered_voter', 'unknown_slice', 'other'] as const;
export type VoteRefusalClass = (typeof VOTE_REFUSALS)[number];

/** The per-client limits on unauthenticated writes (relay-rate-limits.ts) whose refusals are counted. */
export const RATE_LIMITS = ['registrations', 'sign_ins'] as const;
export type RateLimitName = (typeof RATE_LIMITS)[number];

const byProblem: Partial<Record<string, VoteRefusalClass>> = {
  not_voter_signature: 'bad_signature',
  created_at_ahead: 'clock_ahead',
  unknown_slice_hash: 'unknown_slice',
  not_path_item: 'wrong_item',
};

/**
 * What this relay process counted as it happened, for `/metrics` (relay-metrics.ts reads these when
 * scraped). Plain integers in fixed records: counting a vote is one increment, with no label
 * object, string or map entry made per request (the vote path is measured against its floors,
 * decision 0530). Per process: each replica counts its own share. Routes count (a use case's
 * outcome as it leaves it), so the use cases stay as they are.
 */
export class RelayCounts {
  readonly votes: Record<VoteOutcomeClass, number> = { stored: 0, equivocation: 0, duplicate: 0 };
  readonly voteRefusals: Record<VoteRefusalClass, number> = { unknown_item: 0, malformed: 0, wrong_item: 0, clock_ahead: 0, bad_signature: 0, unregistered_voter: 0, unknown_slice: 0, other: 0 };
  readonly rateLimited: Record<RateLimitName, number> = { registrations: 0, sign_ins: 0 };
  /** Nodes registered by POST /register (a registration sent again is no new node). */
  registrations = 0;

  /** A vote POST /items/{id}/vote took, by what storing it did. */
  voteTaken(outcome: StoredVote): void {
    if (!outcome.stored) this.votes.duplicate++;
    else if (outcome.equivocation) this.votes.equivocation++;
    else this.votes.stored++;
  }

  /**
   * A vote POST /items/{id}/vote refused with `error`, counted by its class; false (and nothing
   * counted) when `error` is no refusal (a storage fault, a bug: the HTTP metrics' 5xx show those).
   */
  voteRefused(error: unknown): boolean {
    const refusal = voteRefusalClass(error);
    if (refusal === null) return false;
    this.voteRefusals[refusal]++;
    return true;
  }
}

/** The class of a vote's refusal, or null when `error` is not a refusal. */
export function voteRefusalClass(error: unknown): VoteRefusalClass | null {
  if (error instanceof RelayRefusal) {
    if (error.code === 'item_not_found') return 'unknown_item';
    if (error.code === 'signer_not_registered') return 'unregistered_voter';
    if (error.code !== 'invalid_input') return 'other';
    const problem = error.extra.input?.problems[0];
    return (problem && byProblem[problem.code]) ?? 'malformed';
  }
  // A core precondition the route's checks let through: the error handler answers it 422.
  if (error instanceof CoreRelayError) return 'malformed';
  return null;
}
