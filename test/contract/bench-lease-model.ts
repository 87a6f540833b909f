import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClock } from '@sinonjs/fake-timers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { checkImageForBoard } from '../../backends/image-check.js';
import { MockBackend } from '../../backends/mock/mock-backend.js';
import { clockFromFakeTimers } from '../../core/clock.js';
import { resolveBoardBackend } from '../../harness/board-resolution.js';
import { HttpError } from '../../server/http/http-error.js';
import { memoryLogger } from '../../server/http/logger.js';
import type { AgentRecord, BenchStore } from '../../server/storage/bench/bench-store.js';
import { FirmwareBlobStore } from '../../server/storage/bench/firmware-blob-store.js';
import { Bench } from '../../server/bench/domain/bench.js';
import { toHttpError } from '../../server/bench/routes/bench-error-http.js';
import { defaultBenchLimits } from '../../server/bench/domain/bench-limits.js';
import { JobLive } from '../../server/bench/domain/job-live.js';
import { LiveBoards } from '../../server/bench/domain/live-boards.js';
import { WorkerGateway } from '../../server/bench/workers/worker-gateway.js';

/**
 * Model-based test of the lease state machine (STYLE.md: `fc.commands` for state machines such
 * as board leases), part of the bench store contract: the model is a few lines of obvious rules;
 * the real `Bench` runs on the store under test with timers on a fake clock. Any sequence of opens, heartbeats, ends, reads and clock advances
 * must give the same answers and leave the same boards leased.
 */

interface ModelSession {
  agent: number;
  board: string;
  idleMs: number;
  expiresAtMs: number;
  state: 'active' | 'ended' | 'expired';
}

interface Model {
  nowMs: number;
  sessions: ModelSession[];
}

interface Real {
  bench: Bench;
  store: BenchStore;
  fake: ReturnType<typeof createClock>;
  agents: AgentRecord[];
  /** Session ids in the order the model created them. */
  sessionIds: string[];
  /** The firmware blob dir of this run, removed when the run ends. */
  blobDir: string;
}

const BOARDS = ['pico', 'uno'];

/** Brings the model's states up to date with its clock: expiry is `now >= expires_at`. */
function expire(model: Model): void {
  for (const s of model.sessions) if (s.state === 'active' && s.expiresAtMs <= model.nowMs) s.state = 'expired';
}

async function status(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
    return 200;
  } catch (err) {
    const answer = toHttpError(err);
    if (answer instanceof HttpError) return answer.status;
    throw err;
  }
}

class OpenCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly agent: number,
    readonly board: string,
    readonly idleSeconds: number,
  ) {}
  check = () => true;
  async run(model: Model, real: Real) {
    expire(model);
    const held = model.sessions.some((s) => s.state === 'active' && s.board === this.board);
    let id: string | undefined;
    const got = await status(real.bench.openSession(real.agents[this.agent]!, this.board, this.idleSeconds).then((s) => (id = s.sessionId)));
    expect(got).toBe(held ? 409 : 200);
    if (!held) {
      const idleMs = Math.round(this.idleSeconds * 1000);
      model.sessions.push({ agent: this.agent, board: this.board, idleMs, expiresAtMs: model.nowMs + idleMs, state: 'active' });
      real.sessionIds.push(id!);
    }
  }
  toString = () => `open(agent ${this.agent}, ${this.board}, ${this.idleSeconds} s)`;
}

class HeartbeatCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly agent: number,
    readonly index: number,
  ) {}
  check = (model: Readonly<Model>) => model.sessions.length > 0;
  async run(model: Model, real: Real) {
    expire(model);
    const i = this.index % model.sessions.length;
    const s = model.sessions[i]!;
    const expected = s.agent !== this.agent ? 404 : s.state !== 'active' ? 409 : 200;
    expect(await status(real.bench.heartbeat(real.agents[this.agent]!, real.sessionIds[i]!))).toBe(expected);
    if (expected === 200) s.expiresAtMs = model.nowMs + s.idleMs;
  }
  toString = () => `heartbeat(agent ${this.agent}, #${this.index})`;
}

class EndCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly agent: number,
    readonly index: number,
  ) {}
  check = (model: Readonly<Model>) => model.sessions.length > 0;
  async run(model: Model, real: Real) {
    expire(model);
    const i = this.index % model.sessions.length;
    const s = model.sessions[i]!;
    const expected = s.agent !== this.agent ? 404 : s.state !== 'active' ? 409 : 200;
    expect(await status(real.bench.endSession(real.agents[this.agent]!, real.sessionIds[i]!))).toBe(expected);
    if (expected === 200) s.state = 'ended';
  }
  toString = () => `end(agent ${this.agent}, #${this.index})`;
}

class AdvanceCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(model: Model, real: Real) {
    model.nowMs += this.ms;
    real.fake.tick(this.ms);
    expire(model);
    // Let the expiry timers' store writes finish. Reads never write, so the leases read now are
    // the model's whether or not the timers ran; that the timers did the sweeping is checked by a
    // sweep of our own finding nothing left to expire.
    await real.bench.expirySettled();
    const leased = (await real.store.listLeases(model.nowMs)).map((l) => l.board).sort();
    const expected = model.sessions.filter((s) => s.state === 'active').map((s) => s.board).sort();
    expect(leased).toEqual(expected);
    expect(await real.store.expireSessions(model.nowMs)).toEqual([]);
  }
  toString = () => `advance(${this.ms} ms)`;
}

class ReadCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly index: number) {}
  check = (model: Readonly<Model>) => model.sessions.length > 0;
  async run(model: Model, real: Real) {
    expire(model);
    const i = this.index % model.sessions.length;
    const s = model.sessions[i]!;
    const got = await real.bench.getSession(real.agents[s.agent]!, real.sessionIds[i]!);
    expect(got.state).toBe(s.state);
    if (s.state === 'active') expect(got.expiresAtMs).toBe(s.expiresAtMs);
  }
  toString = () => `read(#${this.index})`;
}

const commands = [
  fc.tuple(fc.integer({ min: 0, max: 1 }), fc.constantFrom(...BOARDS), fc.constantFrom(10, 10.5, 30, 90)).map(([a, b, i]) => new OpenCommand(a, b, i)),
  fc.tuple(fc.integer({ min: 0, max: 1 }), fc.nat()).map(([a, i]) => new HeartbeatCommand(a, i)),
  fc.tuple(fc.integer({ min: 0, max: 1 }), fc.nat()).map(([a, i]) => new EndCommand(a, i)),
  fc.constantFrom(1, 500, 9_999, 10_000, 10_500, 30_000, 90_000).map((ms) => new AdvanceCommand(ms)),
  fc.nat().map((i) => new ReadCommand(i)),
];

async function setup(makeStore: () => BenchStore | Promise<BenchStore>): Promise<Real> {
  const fake = createClock(Date.UTC(2026, 0, 1));
  const clock = clockFromFakeTimers(fake);
  const store = await makeStore();
  const blobDir = mkdtempSync(path.join(tmpdir(), 'hilbench-model-'));
  const boards = new LiveBoards({
    clock,
    boards: loadBoardCatalog().filter((b) => BOARDS.includes(b.id)),
    // Every board online on the mock (leases are the subject here, not workers' reports).
    resolve: (board) => resolveBoardBackend(board, { mock: new MockBackend() }, 'mock'),
    logger: memoryLogger(),
  });
  const blobs = new FirmwareBlobStore(blobDir);
  const live = new JobLive();
  const logger = memoryLogger();
  const gateway = new WorkerGateway({ clock, store, blobs, live, limits: defaultBenchLimits, logger });
  const bench = new Bench({
    clock,
    store,
    blobs,
    boards,
    gateway,
    live,
    limits: defaultBenchLimits,
    logger: memoryLogger(),
    checkImage: checkImageForBoard,
    waitlistCount: async () => 0,
  });
  await bench.start();
  const agents: AgentRecord[] = [];
  for (const label of ['a0', 'a1']) {
    const reg = await bench.registerAgent(label);
    agents.push((await bench.authenticate(`Bearer ${reg.token}`)));
  }
  return { bench, store, fake, agents, sessionIds: [], blobDir };
}

/** The lease model test on stores from `makeStore` (fresh and empty each). */
export function describeLeaseModel(name: string, makeStore: () => BenchStore | Promise<BenchStore>, options: { numRuns?: number } = {}): void {
  describe(`bench store contract: ${name}: lease state machine (model-based)`, () => {
    it('matches the model for any sequence of opens, heartbeats, ends, reads and clock advances', async () => {
      await fc.assert(
        fc.asyncProperty(fc.commands(commands, { maxCommands: 40 }), async (cmds) => {
          const real = await setup(makeStore);
          try {
            await fc.asyncModelRun(() => ({ model: { nowMs: Date.UTC(2026, 0, 1), sessions: [] }, real }), cmds);
          } finally {
            await real.bench.close();
            await real.store.close();
            rmSync(real.blobDir, { recursive: true, force: true });
          }
        }),
        { numRuns: options.numRuns ?? 60 },
      );
      // A bound, not a speed assertion: each run builds a fresh store (a fresh database on PostgreSQL),
      // which a loaded 2-core machine can take seconds for (one CI run hit 240 s with 60 runs).
    }, 600_000);
  });
}
