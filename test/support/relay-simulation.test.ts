import { describe, expect, it } from 'vitest';
import { RelayError } from '../../core/relay/problem.js';
import type { QuorumSet } from '../../core/relay/quorum-set.js';
import { SIM_SIGNATURE, Simulation, type SimNode, seededRandom } from './relay-simulation.js';

const item = 'ab'.repeat(32);
const names = ['a', 'b', 'c', 'd'];
const symmetric = (self: string): QuorumSet => ({ t: 2, v: names.filter((n) => n !== self), i: [] });
const network = (behaviour: (id: string) => SimNode['behaviour']): SimNode[] =>
  names.map((id) => ({ id, slice: symmetric(id), behaviour: behaviour(id) }));

describe('Simulation', () => {
  it('brings four honest yes-voters to confirmed yes, each emitting vote, accept and confirm once', () => {
    const sim = new Simulation({ item, nodes: network(() => ({ kind: 'honest', vote: 'yes' })), random: seededRandom(1) });
    expect(sim.pendingCount).toBe(4 * 3);
    sim.runToQuiescence();
    for (const id of names) {
      expect(sim.bulletin(id)).toMatchObject({ state: 'confirmed', value: 'yes', toEmit: [] });
      expect(sim.emittedBy(id)).toEqual([
        { value: 'yes', phase: 'accept' },
        { value: 'yes', phase: 'confirm' },
      ]);
    }
    // 4 nodes x 3 statements x 3 recipients.
    expect(sim.delivered).toBe(36);
    expect(sim.statementsAt('a').every((s) => s.sig === SIM_SIGNATURE && s.item === item)).toBe(true);
  });

  it('is reproducible from the seed and differs between seeds in delivery order', () => {
    const order = (seed: number) => {
      const sim = new Simulation({ item, nodes: network(() => ({ kind: 'honest', vote: 'yes' })), random: seededRandom(seed) });
      sim.runSteps(5);
      return sim.statementsAt('a').map((s) => `${s.voter}:${s.phase}`).join(',');
    };
    expect(order(7)).toBe(order(7));
    expect(new Set([1, 2, 3, 4, 5, 6].map(order)).size).toBeGreaterThan(1);
  });

  it('lets an equivocator speak both values to random subsets, and lists it as an equivocator', () => {
    const sim = new Simulation({
      item,
      nodes: network((id) => (id === 'd' ? { kind: 'equivocator' } : { kind: 'honest', vote: 'no' })),
      random: seededRandom(3),
    });
    sim.runToQuiescence();
    const heard = names.filter((id) => id !== 'd').flatMap((id) => sim.statementsAt(id).filter((s) => s.voter === 'd'));
    expect(new Set(heard.map((s) => s.value))).toEqual(new Set(['yes', 'no']));
    for (const id of ['a', 'b', 'c']) expect(sim.bulletin(id)).toMatchObject({ state: 'confirmed', value: 'no' });
    expect(names.some((id) => sim.bulletin(id).equivocators.includes('d'))).toBe(true);
  });

  it('keeps silent and non-voting nodes quiet', () => {
    const sim = new Simulation({
      item,
      nodes: network((id) => (id === 'a' ? { kind: 'silent' } : { kind: 'honest', vote: null })),
      random: seededRandom(0),
    });
    expect(sim.pendingCount).toBe(0);
    expect(sim.step()).toBe(false);
    expect(sim.bulletin('b').state).toBe('uncommitted');
  });

  it('refuses a node listed twice and fails loudly when deliveries never end', () => {
    const nodes = network(() => ({ kind: 'honest', vote: 'yes' }));
    expect(() => new Simulation({ item, nodes: [...nodes, nodes[0] as SimNode], random: seededRandom(0) })).toThrow(RelayError);
    const sim = new Simulation({ item, nodes, random: seededRandom(0) });
    expect(() => sim.runToQuiescence(3)).toThrow(/after 3 deliveries/);
  });
});
