import { describe, expect, it } from 'vitest';
import type { QuorumSet } from './quorum-set.js';
import { type Emitted, tally } from './tally.js';
import type { Vote, VotePhase, VoteValue } from './vote.js';

const item = 'ab'.repeat(32);
const id = (n: number) => n.toString(16).padStart(64, '0');
const nodes = [1, 2, 3, 4].map(id) as [string, string, string, string];
const [a, b, c, d] = nodes;
// 4 nodes, each trusting 2 of the other 3: quorums of 3, v-blocking sets of 2.
const slices = new Map<string, QuorumSet>(nodes.map((n) => [n, { t: 2, v: nodes.filter((m) => m !== n), i: [] }]));
const sliceOf = (n: string) => slices.get(n);

const st = (voter: string, value: VoteValue, phase: VotePhase, forItem = item): Vote => ({
  schema: 'x.vote/1',
  scheme: 'scp-s5',
  item: forItem,
  voter,
  value,
  phase,
  slice_hash: '0'.repeat(64),
  created_at: 0,
  sig: 'A'.repeat(86),
});
const run = (statements: Vote[], emitted: Emitted = [], self = a) => tally({ self, item, statements, sliceOf, emitted });

describe('tally', () => {
  it('is uncommitted with nothing, voted with its own vote', () => {
    expect(run([])).toMatchObject({ state: 'uncommitted', value: null, toEmit: [], accepted_via: null });
    expect(run([st(a, 'yes', 'vote')])).toMatchObject({ state: 'voted', value: 'yes', toEmit: [] });
  });

  it('accepts through a quorum that includes its own vote, then emits accept', () => {
    const result = run([st(a, 'yes', 'vote'), st(b, 'yes', 'vote'), st(c, 'yes', 'vote')]);
    expect(result).toMatchObject({ state: 'accepted', value: 'yes', accepted_via: 'quorum', toEmit: [{ value: 'yes', phase: 'accept' }] });
    expect(result.counts.yes).toEqual({ vote: 3, accept: 0, confirm: 0 });
  });

  it('does not accept through a quorum without its own vote', () => {
    expect(run([st(b, 'yes', 'vote'), st(c, 'yes', 'vote'), st(d, 'yes', 'vote')]).state).toBe('uncommitted');
  });

  it('accepts what a v-blocking set accepts, against its own vote', () => {
    // b and c block a's slice (2 of 3 needed); with a's own acceptance they are also a quorum of a,
    // so a accepts and confirms in one tally.
    const result = run([st(a, 'no', 'vote'), st(b, 'yes', 'accept'), st(c, 'yes', 'confirm')]);
    expect(result).toMatchObject({
      state: 'confirmed',
      value: 'yes',
      accepted_via: 'v-blocking',
      toEmit: [
        { value: 'yes', phase: 'accept' },
        { value: 'yes', phase: 'confirm' },
      ],
    });
    // With a 3-of-3 slice, one accepting node is already v-blocking but no quorum: accept, no confirm.
    const strict = new Map(nodes.map((n) => [n, { t: 3, v: nodes.filter((m) => m !== n), i: [] }]));
    const alone = tally({ self: a, item, statements: [st(a, 'no', 'vote'), st(b, 'yes', 'accept')], sliceOf: (n) => strict.get(n), emitted: [] });
    expect(alone).toMatchObject({ state: 'accepted', value: 'yes', accepted_via: 'v-blocking' });
  });

  it('confirms when a quorum accepts, counting its own emitted accept', () => {
    const statements = [st(a, 'yes', 'vote'), st(b, 'yes', 'accept'), st(c, 'yes', 'accept')];
    expect(run(statements, [{ value: 'yes', phase: 'accept' }])).toMatchObject({
      state: 'confirmed',
      value: 'yes',
      toEmit: [{ value: 'yes', phase: 'confirm' }],
    });
    expect(run(statements, [{ value: 'yes', phase: 'accept' }, { value: 'yes', phase: 'confirm' }]).toEmit).toEqual([]);
  });

  it('keeps its rank from what it emitted even when the statements are gone', () => {
    expect(run([], [{ value: 'no', phase: 'accept' }])).toMatchObject({ state: 'accepted', value: 'no', accepted_via: null, toEmit: [] });
  });

  it('becomes conflicted, and stops emitting, when the other value is accepted after its own accept', () => {
    const result = run([st(b, 'no', 'accept'), st(c, 'no', 'accept')], [{ value: 'yes', phase: 'accept' }]);
    expect(result).toMatchObject({ state: 'conflicted', value: null, toEmit: [] });
  });

  it('lists equivocators and still counts each of their statements once', () => {
    const result = run([st(b, 'yes', 'vote'), st(b, 'no', 'vote'), st(b, 'no', 'vote'), st(c, 'yes', 'accept')]);
    expect(result.equivocators).toEqual([b]);
    expect(result.counts).toEqual({ yes: { vote: 1, accept: 1, confirm: 0 }, no: { vote: 1, accept: 0, confirm: 0 } });
  });

  it('ignores statements about other items and reports its slice hash', () => {
    const result = run([st(a, 'yes', 'vote'), st(b, 'yes', 'vote', 'cd'.repeat(32)), st(c, 'yes', 'vote', 'cd'.repeat(32))]);
    expect(result.state).toBe('voted');
    expect(result.slice_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(tally({ self: id(9), item, statements: [], sliceOf, emitted: [] }).slice_hash).toBeNull();
  });
});
