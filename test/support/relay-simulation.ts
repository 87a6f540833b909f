import { RelayError } from '../../core/relay/problem.js';
import type { QuorumSet } from '../../core/relay/quorum-set.js';
import { type Bulletin, type Emitted, type EmittedStatement, type TallyInput, tally } from '../../core/relay/tally.js';
import { type Vote, type VotePhase, type VoteValue, VOTE_SCHEMA, VOTE_SCHEME, votePhases, voteValues } from '../../core/relay/vote.js';

/**
 * An in-memory network of scp-s5 nodes for the tally's property tests and benchmarks: every node has a slice and a
 * behaviour, messages sit in one pending pool and are delivered one at a time in an order chosen by
 * `random`, and each honest node tallies after every delivery and broadcasts what the tally says to emit.
 * Statements carry a placeholder signature: the tally never verifies (the relay verifies on ingest).
 */
export type SimBehaviour =
  /** Follows the protocol; votes `vote` at the start, or never votes when null. */
  | { kind: 'honest'; vote: VoteValue | null }
  /** Signs every statement for both values, each delivered to a random subset of the other nodes. */
  | { kind: 'equivocator' }
  /** Never says anything. */
  | { kind: 'silent' };

export interface SimNode {
  id: string;
  slice: QuorumSet | undefined;
  behaviour: SimBehaviour;
}

export interface SimulationOptions {
  item: string;
  nodes: SimNode[];
  /** Uniform in [0, 1): picks delivery order and which statements equivocators send where. */
  random: () => number;
  /**
   * The tally honest nodes run; `tally` unless a test swaps in a deliberately broken one to prove the
   * safety properties can fail.
   */
  tally?: (input: TallyInput) => Bulletin;
}

interface Delivery {
  to: string;
  vote: Vote;
}

/** Placeholder `sig` of simulated statements: well-formed, never valid. */
export const SIM_SIGNATURE = 'A'.repeat(86);

export class Simulation {
  readonly item: string;
  readonly nodes: ReadonlyMap<string, SimNode>;
  private readonly random: () => number;
  private readonly tallyFn: (input: TallyInput) => Bulletin;
  private readonly stores = new Map<string, Vote[]>();
  private readonly emitted = new Map<string, EmittedStatement[]>();
  private readonly pending: Delivery[] = [];
  private deliveredCount = 0;

  constructor(options: SimulationOptions) {
    this.item = options.item;
    this.random = options.random;
    this.tallyFn = options.tally ?? tally;
    const nodes = new Map<string, SimNode>();
    for (const node of options.nodes) {
      if (nodes.has(node.id)) throw new RelayError(`simulation node ${node.id} listed twice`);
      nodes.set(node.id, node);
      this.stores.set(node.id, []);
      this.emitted.set(node.id, []);
    }
    this.nodes = nodes;
    for (const node of options.nodes) {
      if (node.behaviour.kind === 'honest' && node.behaviour.vote !== null) {
        this.publish(node.id, node.behaviour.vote, 'vote');
      } else if (node.behaviour.kind === 'equivocator') {
        for (const value of voteValues) {
          for (const phase of votePhases) this.publishToSome(node.id, this.statement(node.id, value, phase));
        }
      }
    }
  }

  /** Declared slice of a node, as every node in the simulation sees it. */
  readonly sliceOf = (node: string): QuorumSet | undefined => this.nodes.get(node)?.slice;

  /** Messages not yet delivered. */
  get pendingCount(): number {
    return this.pending.length;
  }

  get delivered(): number {
    return this.deliveredCount;
  }

  /** Delivers one pending message, chosen at random; false when none was pending. */
  step(): boolean {
    if (this.pending.length === 0) return false;
    const k = Math.min(this.pending.length - 1, Math.floor(this.random() * this.pending.length));
    const delivery = this.pending[k] as Delivery;
    this.pending[k] = this.pending[this.pending.length - 1] as Delivery;
    this.pending.pop();
    this.deliveredCount++;
    this.receive(delivery.to, delivery.vote);
    return true;
  }

  /**
   * Delivers until nothing is pending. Every honest node emits at most three statements and every
   * equivocator six, so the traffic is bounded; `maxDeliveries` turns a bug into a clear failure.
   */
  runToQuiescence(maxDeliveries = 100 * this.nodes.size * this.nodes.size): void {
    for (let n = 0; this.step(); n++) {
      if (n >= maxDeliveries) {
        throw new RelayError(`simulation still had ${this.pending.length} messages after ${maxDeliveries} deliveries`);
      }
    }
  }

  /** Delivers at most `count` messages. */
  runSteps(count: number): void {
    for (let n = 0; n < count && this.step(); n++);
  }

  /** Statements node `id` has received or signed. */
  statementsAt(id: string): readonly Vote[] {
    return this.stores.get(id) ?? [];
  }

  emittedBy(id: string): Emitted {
    return this.emitted.get(id) ?? [];
  }

  /** The node's current bulletin for the item. */
  bulletin(id: string): Bulletin {
    return this.tallyFn({
      self: id,
      item: this.item,
      statements: this.statementsAt(id),
      sliceOf: this.sliceOf,
      emitted: this.emittedBy(id),
    });
  }

  private statement(voter: string, value: VoteValue, phase: VotePhase): Vote {
    return {
      schema: VOTE_SCHEMA,
      scheme: VOTE_SCHEME,
      item: this.item,
      voter,
      value,
      phase,
      slice_hash: '0'.repeat(64),
      created_at: 0,
      sig: SIM_SIGNATURE,
    };
  }

  private publish(from: string, value: VoteValue, phase: VotePhase): void {
    const vote = this.statement(from, value, phase);
    this.stores.get(from)?.push(vote);
    for (const to of this.nodes.keys()) if (to !== from) this.pending.push({ to, vote });
  }

  private publishToSome(from: string, vote: Vote): void {
    for (const to of this.nodes.keys()) if (to !== from && this.random() < 0.5) this.pending.push({ to, vote });
  }

  private receive(to: string, vote: Vote): void {
    this.stores.get(to)?.push(vote);
    const node = this.nodes.get(to);
    if (node?.behaviour.kind !== 'honest') return;
    const emitted = this.emitted.get(to) as EmittedStatement[];
    // Emitting accept can make confirm hold at once: tally again until nothing new is due.
    for (let bulletin = this.bulletin(to); bulletin.toEmit.length > 0; bulletin = this.bulletin(to)) {
      for (const e of bulletin.toEmit) {
        emitted.push(e);
        this.publish(to, e.value, e.phase);
      }
    }
  }
}

/** A small deterministic PRNG (mulberry32) for reproducible delivery orders from a seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
