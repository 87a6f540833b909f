import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { checkImageForBoard } from '../../backends/image-check.js';
import { MockBackend } from '../../backends/mock/mock-backend.js';
import { clockFromFakeTimers } from '../../core/clock.js';
import { resolveBoardBackend } from '../../harness/board-resolution.js';
import { memoryLogger } from '../../server/http/logger.js';
import type { AgentRecord } from '../../server/storage/bench/bench-store.js';
import { FirmwareBlobStore } from '../../server/storage/bench/firmware-blob-store.js';
import { SqliteBenchStore } from '../../server/storage/bench/sqlite-bench-store.js';
import { DatabaseUnavailableError } from '../../server/storage/storage-faults.js';
import { Bench } from '../../server/bench/domain/bench.js';
import { defaultBenchLimits } from '../../server/bench/domain/bench-limits.js';
import { JobLive } from '../../server/bench/domain/job-live.js';
import { LiveBoards } from '../../server/bench/domain/live-boards.js';
import { WorkerGateway } from '../../server/bench/workers/worker-gateway.js';

/**
 * A session opened while the database restarts: the COMMIT went through but its answer was lost,
 * so the store threw DatabaseUnavailableError, and the waiting request tries again after the
 * fault's Retry-After (the session queue outlasts a restart). The next try must answer the session
 * the lost one stored, not open a second one nor wait behind the caller's own lease.
 */
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A store whose next `openSession` stores the session, then fails as a lost COMMIT answer does. */
class AnswerLosingStore extends SqliteBenchStore {
  loseNextOpenAnswer = false;
  override async openSession(...args: Parameters<SqliteBenchStore['openSession']>): ReturnType<SqliteBenchStore['openSession']> {
    const result = await super.openSession(...args);
    if (this.loseNextOpenAnswer && result.kind === 'opened') {
      this.loseNextOpenAnswer = false;
      throw new DatabaseUnavailableError('the connection ended before COMMIT was answered', 1);
    }
    return result;
  }
}

async function benchOn(store: AnswerLosingStore) {
  const fake = createClock(Date.UTC(2026, 0, 1));
  const clock = clockFromFakeTimers(fake);
  const blobDir = mkdtempSync(path.join(tmpdir(), 'hilbench-lost-answer-'));
  const boards = new LiveBoards({
    clock,
    boards: loadBoardCatalog().filter((b) => b.id === 'uno'),
    resolve: (board) => resolveBoardBackend(board, { mock: new MockBackend() }, 'mock'),
    logger: memoryLogger(),
  });
  const live = new JobLive();
  const gateway = new WorkerGateway({ clock, store, blobs: new FirmwareBlobStore(blobDir), live, limits: defaultBenchLimits, logger: memoryLogger() });
  const bench = new Bench({ clock, store, blobs: new FirmwareBlobStore(blobDir), boards, gateway, live, limits: defaultBenchLimits, logger: memoryLogger(), checkImage: checkImageForBoard, waitlistCount: async () => 0 });
  await bench.start();
  cleanups.push(async () => {
    await bench.close();
    await store.close();
    rmSync(blobDir, { recursive: true, force: true });
  });
  const agents: AgentRecord[] = [];
  for (const label of ['holder', 'waiter']) agents.push(await bench.authenticate(`Bearer ${(await bench.registerAgent(label)).token}`));
  return { bench, fake, holder: agents[0]!, waiter: agents[1]! };
}

describe('a session opened while the database loses its answer', () => {
  it('is answered once, on the try after the fault, and no second session is opened', async () => {
    const store = new AnswerLosingStore(':memory:');
    const { bench, fake, holder, waiter } = await benchOn(store);
    const held = await bench.openSession(holder, 'uno', 60);
    const waiting = bench.openSession(waiter, 'uno', 60, { seconds: 30, signal: new AbortController().signal });
    let settledAtMs: number | undefined;
    const settled = waiting.then(
      (body) => body,
      (err: unknown) => err,
    ).finally(() => (settledAtMs = fake.now));
    await fake.tickAsync(0);
    const endedAtMs = fake.now;
    store.loseNextOpenAnswer = true;
    await bench.endSession(holder, held.sessionId);
    // The woken waiter's try stores the session and loses the answer; the next, after the fault's
    // Retry-After (1 s), finds it.
    // Past the whole wait, so that a request still waiting (behind its own lease) answers 409.
    await fake.tickAsync(31_000);
    const opened = await settled;
    expect(settledAtMs! - endedAtMs).toBeLessThanOrEqual(1_000);
    expect(opened).toMatchObject({ board: 'uno', state: 'active' });
    const active = (await store.listActiveSessions(fake.now)).filter((s) => s.agentId === waiter.agentId);
    expect(active.map((s) => s.sessionId)).toEqual([(opened as { sessionId: string }).sessionId]);
  });

  it('answers the stored session when the first try (the board free) loses its answer, after the fault\'s Retry-After', async () => {
    const store = new AnswerLosingStore(':memory:');
    const { bench, fake, waiter } = await benchOn(store);
    store.loseNextOpenAnswer = true;
    let settledAtMs: number | undefined;
    const settled = bench.openSession(waiter, 'uno', 60).then(
      (body) => body,
      (err: unknown) => err,
    ).finally(() => (settledAtMs = fake.now));
    const startMs = fake.now;
    await fake.tickAsync(1_000);
    const opened = await settled;
    expect(opened).toMatchObject({ board: 'uno', state: 'active' });
    expect(settledAtMs! - startMs).toBe(1_000);
    const active = (await store.listActiveSessions(fake.now)).filter((s) => s.agentId === waiter.agentId);
    expect(active.map((s) => s.sessionId)).toEqual([(opened as { sessionId: string }).sessionId]);
  });

  it('still answers 503 when the try that lost its answer stored nothing', async () => {
    const store = new AnswerLosingStore(':memory:');
    const { bench, fake, waiter } = await benchOn(store);
    const away = new DatabaseUnavailableError('the database is restarting', 1);
    store.openSession = async () => Promise.reject(away);
    const settled = bench.openSession(waiter, 'uno', 60).then(
      (body) => body,
      (err: unknown) => err,
    );
    await fake.tickAsync(1_000);
    expect(await settled).toBe(away);
  });
});
