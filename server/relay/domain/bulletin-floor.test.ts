import { describe, expect, it } from 'vitest';
import type { Bulletin } from '../../../core/relay/tally.js';
import type { Vote } from '../../../core/relay/vote.js';
import { applyFloor, raisesFloor, signedAmong } from './bulletin-floor.js';

const NODE = 'a'.repeat(64);
const zero = { vote: 0, accept: 0, confirm: 0 };
const computed = (over: Partial<Bulletin> = {}): Bulletin => ({
  state: 'voted',
  value: 'yes',
  counts: { yes: { ...zero }, no: { ...zero } },
  accepted_via: null,
  equivocators: [],
  slice_hash: null,
  toEmit: [],
  ...over,
});
const signed = (value: 'yes' | 'no', phase: 'vote' | 'accept' | 'confirm') => ({ voter: NODE, value, phase }) as Vote;

describe('applyFloor', () => {
  it('reports the tally as it is when there is no floor or the tally is at or above it', () => {
    expect(applyFloor(computed(), undefined, signedAmong([], NODE))).toEqual(computed());
    const accepted = computed({ state: 'accepted', accepted_via: 'quorum' });
    expect(applyFloor(accepted, { state: 'accepted', value: 'yes', acceptedVia: 'quorum' }, signedAmong([], NODE))).toBe(accepted);
  });

  it('never reports below the floor, and asks the node to sign what the floor implies', () => {
    const floor = { state: 'confirmed', value: 'yes', acceptedVia: 'v-blocking' } as const;
    expect(applyFloor(computed(), floor, signedAmong([signed('yes', 'vote')], NODE))).toMatchObject({
      state: 'confirmed',
      value: 'yes',
      accepted_via: 'v-blocking',
      toEmit: [
        { value: 'yes', phase: 'accept' },
        { value: 'yes', phase: 'confirm' },
      ],
    });
    // What it already signed is not asked again.
    expect(applyFloor(computed(), floor, signedAmong([signed('yes', 'accept')], NODE)).toEmit).toEqual([{ value: 'yes', phase: 'confirm' }]);
  });

  it('reports conflicted when the floor and the tally accepted different values', () => {
    const now = computed({ state: 'accepted', value: 'no', accepted_via: 'quorum', toEmit: [{ value: 'no', phase: 'accept' }] });
    expect(applyFloor(now, { state: 'accepted', value: 'yes', acceptedVia: 'quorum' }, signedAmong([], NODE))).toMatchObject({ state: 'conflicted', value: null, accepted_via: null, toEmit: [] });
  });
});

describe('raisesFloor', () => {
  it('is true only above the stored floor', () => {
    expect(raisesFloor(computed({ state: 'uncommitted', value: null }), undefined)).toBe(false);
    expect(raisesFloor(computed(), undefined)).toBe(true);
    expect(raisesFloor(computed(), { state: 'voted', value: 'yes', acceptedVia: null })).toBe(false);
    expect(raisesFloor(computed({ state: 'accepted' }), { state: 'voted', value: 'yes', acceptedVia: null })).toBe(true);
  });
});
