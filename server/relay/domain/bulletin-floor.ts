import { type Bulletin, type EmittedStatement, bulletinRank } from '../../../core/relay/tally.js';
import type { Vote, VoteValue } from '../../../core/relay/vote.js';
import type { Floor } from '../../storage/relay/vote-repository.js';

export type { Floor };

/**
 * The computed bulletin, never below `floor` (design scp-s5: a node's rank for an item never goes
 * down). Both at accepted or above for different values is `conflicted` (the node would have
 * accepted both sides). A floored bulletin asks the node to sign what the floor implies and it has
 * not signed yet. Pure: the caller reads and writes the floor.
 */
export function applyFloor(computed: Bulletin, floor: Floor | undefined, hasSigned: HasSigned): Bulletin {
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
    const value = floor.value;
    const signed = (phase: 'accept' | 'confirm') => hasSigned(value, phase);
    if (!signed('accept') && !signed('confirm')) toEmit.push({ value: floor.value, phase: 'accept' });
    if (floor.state === 'confirmed' && !signed('confirm')) toEmit.push({ value: floor.value, phase: 'confirm' });
  }
  return { ...computed, state: floor.state, value: floor.value, accepted_via: floor.acceptedVia, toEmit };
}

/** Whether the node signed `phase` for `value` about the item. */
export type HasSigned = (value: VoteValue, phase: 'accept' | 'confirm') => boolean;

/** `HasSigned` answered by scanning an item's statements (the growing tally answers it from its sets). */
export function signedAmong(statements: readonly Vote[], nodeId: string): HasSigned {
  return (value, phase) => statements.some((s) => s.voter === nodeId && s.value === value && s.phase === phase);
}

/** Whether `reported` ranks above the stored floor, so the floor must be raised to it. */
export function raisesFloor(reported: Bulletin, floor: Floor | undefined): boolean {
  return bulletinRank[reported.state] > (floor ? bulletinRank[floor.state] : 0);
}
