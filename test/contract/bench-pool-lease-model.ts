import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BenchStore, OpenSessionResult } from '../../server/storage/bench/bench-store.js';
import { sessionRecord, T0 } from './bench-store-contract.js';

/**
 * Model-based test of leases on pools and of the session queue (issue 27, decisions 0510 and 0555),
 * on one store or on several store instances writing one database at once (as replicas do). Each
 * command runs on the store its index picks; the race commands run on every store in the same
 * tick. The model is a few obvious rules: a session holds the first free instance of its pool, an
 * instance is held by one session at most (no double booking), a session expires once, and the
 * waiters of a pool are served in the order they came (FIFO per pool).
 */

const POOLS: Record<string, readonly string[]> = { pico: ['pico.1@w1', 'pico.2@w1', 'pico.1@w2'], uno: ['uno'] };
const AGENTS = ['ag_1', 'ag_2', 'ag_3'];
const LIVE_MS = 10 * 365 * 24 * 3600 * 1000;

interface ModelSession {
  id: string;
  agent: string;
  pool: string;
  instance: string;
  idleMs: number;
  expiresAtMs: number;
  state: 'active' | 'ended' | 'expired';
}

interface Model {
  nowMs: number;
  sessions: ModelSession[];
  /** Per pool, waiter ids in the order they joined. */
  waiters: Record<string, string[]>;
  next: number;
}

interface Real {
  stores: BenchStore[];
}

/** Expires due sessions in the model; returns their ids. */
function expire(model: Model): string[] {
  const due = model.sessions.filter((s) => s.state === 'active' && s.expiresAtMs <= model.nowMs);
  for (const s of due) s.state = 'expired';
  return due.map((s) => s.id);
}

const freeInstances = (model: Model, pool: string) => POOLS[pool]!.filter((i) => !model.sessions.some((s) => s.state === 'active' && s.instance === i));
const storeOf = (real: Real, k: number) => real.stores[k % real.stores.length]!;

function open(real: Real, k: number, model: Model, agent: string, pool: string, idleSeconds: number): { id: string; result: Promise<OpenSessionResult> } {
  const id = `ses_${model.next++}`;
  const session = sessionRecord({ sessionId: id, agentId: agent, board: pool, idleSeconds, createdAtMs: model.nowMs, expiresAtMs: model.nowMs + idleSeconds * 1000 });
  return { id, result: storeOf(real, k).openSession(session, { instances: POOLS[pool]! }) };
}

class OpenCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly store: number, readonly agent: string, readonly pool: string, readonly idleSeconds: number) {}
  check = () => true;
  async run(model: Model, real: Real) {
    expire(model);
    const free = freeInstances(model, this.pool);
    const { id, result } = open(real, this.store, model, this.agent, this.pool, this.idleSeconds);
    const got = await result;
    if (free.length === 0) {
      expect(got.kind).toBe('board-leased');
      return;
    }
    expect(got).toMatchObject({ kind: 'opened' });
    const instance = got.kind === 'opened' ? (got.session.instance ?? got.session.board) : '';
    expect(instance).toBe(free[0]);
    model.sessions.push({ id, agent: this.agent, pool: this.pool, instance, idleMs: this.idleSeconds * 1000, expiresAtMs: model.nowMs + this.idleSeconds * 1000, state: 'active' });
  }
  toString = () => `open(store ${this.store}, ${this.agent}, ${this.pool}, ${this.idleSeconds} s)`;
}

/** Every agent opens a session on `pool` at once, each through another store: as many win as instances are free, each on its own. */
class RaceCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pool: string) {}
  check = () => true;
  async run(model: Model, real: Real) {
    expire(model);
    const free = freeInstances(model, this.pool);
    const tries = AGENTS.map((agent, k) => ({ agent, ...open(real, k, model, agent, this.pool, 30) }));
    const results = await Promise.all(tries.map((t) => t.result));
    const won = results.flatMap((r, k) => (r.kind === 'opened' ? [{ ...tries[k]!, instance: r.session.instance ?? r.session.board }] : []));
    expect(won).toHaveLength(Math.min(free.length, AGENTS.length));
    expect(new Set(won.map((w) => w.instance)).size).toBe(won.length);
    for (const w of won) expect(free).toContain(w.instance);
    for (const w of won) model.sessions.push({ id: w.id, agent: w.agent, pool: this.pool, instance: w.instance, idleMs: 30_000, expiresAtMs: model.nowMs + 30_000, state: 'active' });
  }
  toString = () => `race(${this.pool})`;
}

class HeartbeatOrEndCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly store: number, readonly index: number, readonly end: boolean) {}
  check = (model: Readonly<Model>) => model.sessions.length > 0;
  async run(model: Model, real: Real) {
    expire(model);
    const s = model.sessions[this.index % model.sessions.length]!;
    const store = storeOf(real, this.store);
    const got = this.end ? await store.endSession(s.id, model.nowMs) : await store.heartbeatSession(s.id, model.nowMs);
    expect(got.kind).toBe(s.state === 'active' ? 'changed' : 'not-active');
    if (s.state !== 'active') return;
    if (this.end) s.state = 'ended';
    else s.expiresAtMs = model.nowMs + s.idleMs;
  }
  toString = () => `${this.end ? 'end' : 'heartbeat'}(store ${this.store}, #${this.index})`;
}

/** The clock moves; every store sweeps at once: each due session expires once, by one of them. */
class AdvanceCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(model: Model, real: Real) {
    model.nowMs += this.ms;
    const due = expire(model);
    const swept = (await Promise.all(real.stores.map((s) => s.expireSessions(model.nowMs)))).flat().map((s) => s.sessionId);
    expect([...swept].sort()).toEqual([...due].sort());
    const leased = (await real.stores[0]!.listLeases(model.nowMs)).map((l) => l.instance ?? l.board).sort();
    expect(leased).toEqual(model.sessions.filter((s) => s.state === 'active').map((s) => s.instance).sort());
  }
  toString = () => `advance(${this.ms} ms)`;
}

class EnqueueCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly store: number, readonly agent: string, readonly pool: string) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const waiterId = `wtr_${model.next++}`;
    await storeOf(real, this.store).sessionQueue.enqueue({ waiterId, queue: this.pool, pool: this.pool, agentId: this.agent, enqueuedAtMs: model.nowMs, aliveUntilMs: model.nowMs + LIVE_MS });
    (model.waiters[this.pool] ??= []).push(waiterId);
  }
  toString = () => `enqueue(store ${this.store}, ${this.agent}, ${this.pool})`;
}

/** The head of a pool's queue is the one that came first, on every store; it leaves (granted). */
class ServeHeadCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly store: number, readonly pool: string) {}
  check = (model: Readonly<Model>) => (model.waiters[this.pool]?.length ?? 0) > 0;
  async run(model: Model, real: Real) {
    const queue = model.waiters[this.pool]!;
    const store = storeOf(real, this.store);
    expect((await store.sessionQueue.waiters(this.pool, model.nowMs)).map((w) => w.waiterId)).toEqual(queue);
    expect(await store.sessionQueue.turn(queue[0]!, model.nowMs)).toEqual({ position: 1, ahead: [] });
    await storeOf(real, this.store + 1).sessionQueue.leave(queue.shift()!);
  }
  toString = () => `serveHead(store ${this.store}, ${this.pool})`;
}

const pool = fc.constantFrom(...Object.keys(POOLS));
const store = fc.integer({ min: 0, max: 3 });
const commands = [
  fc.tuple(store, fc.constantFrom(...AGENTS), pool, fc.constantFrom(10, 30, 90)).map(([k, a, p, i]) => new OpenCommand(k, a, p, i)),
  pool.map((p) => new RaceCommand(p)),
  fc.tuple(store, fc.nat(), fc.boolean()).map(([k, i, end]) => new HeartbeatOrEndCommand(k, i, end)),
  fc.constantFrom(1, 9_999, 10_000, 30_000, 90_000).map((ms) => new AdvanceCommand(ms)),
  fc.tuple(store, fc.constantFrom(...AGENTS), pool).map(([k, a, p]) => new EnqueueCommand(k, a, p)),
  fc.tuple(store, pool).map(([k, p]) => new ServeHeadCommand(k, p)),
];

/**
 * The pool lease model on `storeCount` stores writing one fresh database (`openStores`, closing
 * them with `close`), `numRuns` sequences of up to 30 commands.
 */
export function describePoolLeaseModel(name: string, openStores: () => Promise<{ stores: BenchStore[]; close: () => Promise<void> }>, options: { numRuns: number }): void {
  describe(`bench store contract: ${name}: pool leases and the session queue (model-based)`, () => {
    it('matches the model: no instance booked twice, a session expires once, FIFO per pool', async () => {
      await fc.assert(
        fc.asyncProperty(fc.commands(commands, { maxCommands: 30 }), async (cmds) => {
          const { stores, close } = await openStores();
          try {
            for (const agentId of AGENTS) await stores[0]!.insertAgent({ agentId, label: agentId, tokenSha256: agentId.padEnd(64, '0'), createdAtMs: T0 });
            await fc.asyncModelRun(() => ({ model: { nowMs: T0, sessions: [], waiters: {}, next: 0 }, real: { stores } }), cmds);
          } finally {
            await close();
          }
        }),
        { numRuns: options.numRuns },
      );
      // A bound, not a speed assertion: each run opens fresh stores on a fresh database.
    }, 600_000);
  });
}
