import { afterEach, describe, expect, it } from 'vitest';
import { done, jobRecord, T0 } from '../../../test/contract/bench-store-contract.js';
import { benchStoreDialects } from '../../../test/support/bench-store-dialects.js';
import type { SqlBenchStore } from './sql-bench-store.js';

/**
 * Statements the store runs for steps the service takes on every job (decision 0860), counted by
 * the store's own counters (statements sent, BEGIN and COMMIT aside): counts no load can move,
 * where a change that adds a round trip to every job shows. What the steps do is the contract's
 * (test/contract/bench-job-queue-contract.ts).
 */
const EMPTY_CLAIM_STATEMENTS: Record<string, number> = { sqlite: 2, postgres: 1 };

describe.each(benchStoreDialects)('bench store statements per step: %s', (name, open) => {
  const opened: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of opened.splice(0)) await close();
  });
  const fresh = async () => {
    const { store, close } = await open();
    opened.push(close);
    await store.insertAgent({ agentId: 'ag_1', label: 'one', tokenSha256: '1'.repeat(64), createdAtMs: T0 });
    return store;
  };
  const counted = async <T>(store: SqlBenchStore, step: () => Promise<T>): Promise<{ result: T; statements: number }> => {
    const before = store.counters.statements;
    const result = await step();
    return { result, statements: store.counters.statements - before };
  };

  it(`looks for a worker's next task and finds none in ${EMPTY_CLAIM_STATEMENTS[name]} statement(s) (PostgreSQL: the check's look in the claim's), takes a job in one`, async () => {
    const store = await fresh();
    const empty = await counted(store, () => store.claimTask({ workerId: 'w1', boards: ['pico', 'uno'], checkBoards: ['pico', 'uno'], nowMs: T0, claimMs: null }));
    expect(empty).toEqual({ result: undefined, statements: EMPTY_CLAIM_STATEMENTS[name] });
    await store.createJob(jobRecord(), { maxQueuedPerBoard: 8, nowMs: T0 });
    const taken = await counted(store, () => store.claimTask({ workerId: 'w1', boards: ['pico'], checkBoards: ['pico'], nowMs: T0 + 1, claimMs: null }));
    expect(taken).toMatchObject({ result: { job: { jobId: 'job_1' } }, statements: 1 });
  });

  it("ends a session-less job whose session the caller passes without reading it: the UPDATE and the lease's DELETE", async () => {
    const store = await fresh();
    await store.createJob(jobRecord(), { maxQueuedPerBoard: 8, nowMs: T0 });
    await store.createJob(jobRecord({ jobId: 'job_2', board: 'uno' }), { maxQueuedPerBoard: 8, nowMs: T0 });
    await store.claimJob({ workerId: 'w1', boards: ['pico', 'uno'], nowMs: T0 + 1, claimMs: null });
    await store.claimJob({ workerId: 'w1', boards: ['pico', 'uno'], nowMs: T0 + 1, claimMs: null });
    expect(await counted(store, () => store.finishJob('job_1', done(T0 + 2), { workerId: 'w1', sessionId: null }))).toMatchObject({ result: { ended: true }, statements: 2 });
    // Not passed: the store reads it first.
    expect(await counted(store, () => store.finishJob('job_2', done(T0 + 2), { workerId: 'w1' }))).toMatchObject({ result: { ended: true }, statements: 3 });
  });
});
