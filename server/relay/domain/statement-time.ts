import type { Problem } from '../../../core/relay/problem.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';

/** Unix seconds of host milliseconds (the unit of `created_at` in signed documents). */
export function unixSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}

/**
 * Why a statement's `created_at` is refused at `nowMs`, or null: more than `proofMaxSkewSeconds`
 * ahead of the relay clock. The one rule for votes however they arrive (POST /items/{id}/vote and
 * federation), so a statement refused over HTTP cannot come in through a peer instead. Old
 * statements are fine: a vote is a fact that stays true.
 */
export function voteTimeProblem(createdAt: number, nowMs: number): string | null {
  const now = unixSeconds(nowMs);
  if (createdAt <= now + relayLimits.proofMaxSkewSeconds) return null;
  return `created_at is in the future: ${createdAt - now} s ahead of the relay clock (at most ${relayLimits.proofMaxSkewSeconds} s)`;
}

/** `voteTimeProblem` as the problem of a request's `created_at` (the translator words it), or null. */
export function voteTimeInputProblem(createdAt: number, nowMs: number): Problem | null {
  const reason = voteTimeProblem(createdAt, nowMs);
  return reason === null ? null : { path: ['created_at'], code: 'created_at_ahead', note: reason, input: createdAt, nowSeconds: unixSeconds(nowMs) };
}
