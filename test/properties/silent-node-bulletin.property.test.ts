import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GrowingTally } from '../../core/relay/growing-tally.js';
import { tally } from '../../core/relay/tally.js';
import { ITEM, nodeName, statementsArb, topologyArb } from './relay-arbitraries.js';

/**
 * A node that signed nothing about an item ranks above `uncommitted` only when the nodes that
 * accepted or confirmed a value block its slice (scp-s5's rules: with no vote of its own it is in
 * no quorum of voters; only v-blocking can make it accept). The relay's write path leans on it
 * (decision 1080): a voter's first statement replacing its published slice holds the voter's floor
 * with a full tally only then, asking the relay node's kept tally (`GrowingTally.acceptersBlock`).
 * Checked against the reference `tally`, on random networks and statements.
 */
describe('a node that signed nothing about an item', () => {
  it('is uncommitted unless the accepters of a value block its slice, as the kept tally says (property)', () => {
    const scene = fc.integer({ min: 2, max: 8 }).chain((n) => {
      const names = Array.from({ length: n }, (_, k) => nodeName(k));
      return fc.record({ names: fc.constant(names), topology: topologyArb(n), silent: fc.constantFrom(...names), keeper: fc.constantFrom(...names), statements: statementsArb(names, 30) });
    });
    fc.assert(
      fc.property(scene, ({ topology, silent, keeper, statements }) => {
        const spoken = statements.filter((s) => s.voter !== silent);
        const sliceOf = (node: string) => topology.get(node);
        const bulletin = tally({ self: silent, item: ITEM, statements: spoken, sliceOf, emitted: [] });
        // The kept tally is another node's (the relay's): its voter sets are the statements' all the same.
        const kept = new GrowingTally(keeper, ITEM, sliceOf);
        for (const s of spoken) kept.add(s);
        const slice = topology.get(silent);
        const blocked = slice !== undefined && (kept.acceptersBlock('yes', slice) || kept.acceptersBlock('no', slice));
        if (!blocked) expect(bulletin.state).toBe('uncommitted');
        // And the check is not vacuous: blocked by the accepters of a value, the node accepts it (or is conflicted).
        else expect(['accepted', 'confirmed', 'conflicted']).toContain(bulletin.state);
      }),
      { numRuns: 2000 },
    );
  });
});
