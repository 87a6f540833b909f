import { type Bulletin, type TallyInput, tally } from '../../core/relay/tally.js';
import { type SimBehaviour, Simulation, seededRandom } from '../support/relay-simulation.js';
import { ITEM, allQuorums, describeTopology, intertwined, simNodes, type Topology } from './relay-arbitraries.js';

/** Shared by the network property tests and their regression tests. */
export interface Outcome {
  sim: Simulation;
  bulletins: Map<string, Bulletin>;
}

export function simulate(topology: Topology, behaviours: Map<string, SimBehaviour>, seed: number, tallyFn?: (i: TallyInput) => Bulletin): Outcome {
  const sim = new Simulation({ item: ITEM, nodes: simNodes(topology, behaviours), random: seededRandom(seed), ...(tallyFn ? { tally: tallyFn } : {}) });
  sim.runToQuiescence();
  return { sim, bulletins: new Map([...topology.keys()].map((id) => [id, sim.bulletin(id)])) };
}

export const honestOf = (behaviours: Map<string, SimBehaviour>) =>
  new Set([...behaviours].filter(([, b]) => b.kind === 'honest').map(([id]) => id));

export const committed = (b: Bulletin | undefined, states: readonly string[]) =>
  b && states.includes(b.state) ? b.value : null;

/** Property 8 check; returns how many intertwined honest pairs both confirmed (to prove non-vacuity). */
export function checkIntertwinedSafety(topology: Topology, behaviours: Map<string, SimBehaviour>, seed: number, tallyFn?: (i: TallyInput) => Bulletin): number {
  const { bulletins } = simulate(topology, behaviours, seed, tallyFn);
  const honest = honestOf(behaviours);
  const names = [...topology.keys()];
  const quorums = allQuorums(names, (n) => topology.get(n));
  let confirmedPairs = 0;
  for (const a of honest) {
    for (const b of honest) {
      if (a >= b || !intertwined(a, b, quorums, honest)) continue;
      const va = committed(bulletins.get(a), ['confirmed']);
      const vb = committed(bulletins.get(b), ['confirmed']);
      if (va !== null && vb !== null) {
        confirmedPairs++;
        if (va !== vb) {
          throw new Error(`intertwined ${a} confirmed ${va} but ${b} confirmed ${vb}; topology ${describeTopology(topology)}`);
        }
      }
    }
  }
  return confirmedPairs;
}


/**
 * The classic bug property 8 exists to catch: checking "a quorum voted/accepted p" as "self's own slice
 * is satisfied by those voters", without requiring every member's slice to be satisfied as well. Built
 * by handing the real tally a view in which every other known node trusts only itself.
 */
export const nonTransitiveTally = (input: TallyInput): Bulletin =>
  tally({
    ...input,
    sliceOf: (node) => {
      const slice = input.sliceOf(node);
      return node === input.self || slice === undefined ? slice : { t: 1, v: [node], i: [] };
    },
  });
