import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GrowingTally } from '../../core/relay/growing-tally.js';
import type { Vote } from '../../core/relay/vote.js';
import { tally } from '../../core/relay/tally.js';
import { ITEM, nodeName, statement, statementsArb, topologyArb } from './relay-arbitraries.js';

/**
 * The growing tally against the reference `tally` (issue 18): random networks (symmetric and
 * heterogeneous nested slices, some nodes without one), random statements in random orders,
 * equivocation and duplicates included, statements about another item mixed in; compared after
 * every statement, and self emitting what each bulletin asks it to.
 */
const scene = fc.integer({ min: 2, max: 8 }).chain((n) => {
  const names = Array.from({ length: n }, (_, k) => nodeName(k));
  return fc.record({
    topology: topologyArb(n),
    withoutSlice: fc.subarray(names, { maxLength: 2 }),
    self: fc.constantFrom(...names),
    statements: statementsArb(names, 40),
    elsewhere: fc.array(fc.constantFrom(...names).map((voter) => statement(voter, 'yes', 'accept', 'cd'.repeat(32))), { maxLength: 3 }),
    emitAsAsked: fc.boolean(),
  });
});

describe('GrowingTally (issue 18: the tally kept up to date statement by statement)', () => {
  it('answers what tally answers over the same statements, after every statement', () => {
    fc.assert(
      fc.property(scene, (s) => {
        const sliceOf = (node: string) => (s.withoutSlice.includes(node) ? undefined : s.topology.get(node));
        const growing = new GrowingTally(s.self, ITEM, sliceOf);
        const seen: Vote[] = [];
        const feed = [...s.elsewhere, ...s.statements];
        for (const next of feed) {
          growing.add(next);
          seen.push(next);
          let expected = tally({ self: s.self, item: ITEM, statements: seen, sliceOf, emitted: [] });
          expect(growing.bulletin()).toEqual(expected);
          // Self signing what it is asked to, as the relay's node does, until nothing is left.
          for (let round = 0; s.emitAsAsked && expected.toEmit.length > 0 && round < 4; round++) {
            for (const e of expected.toEmit) {
              const own = statement(s.self, e.value, e.phase);
              growing.add(own);
              seen.push(own);
            }
            expected = tally({ self: s.self, item: ITEM, statements: seen, sliceOf, emitted: [] });
            expect(growing.bulletin()).toEqual(expected);
          }
        }
      }),
      { numRuns: 600 },
    );
  });
});
