import { describe, expect, it } from 'vitest';
import type { BenchStore } from '../../server/storage/bench/bench-store.js';
import { claimBy, done, jobRecord, T0 } from './bench-store-contract.js';

const queueOf = (nowMs: number) => ({ maxQueuedPerBoard: 8, nowMs });
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const input = (s: string) => new TextEncoder().encode(s);
const limits = (nowMs: number, maxPendingBytes = 64) => ({ nowMs, maxPendingBytes });

/**
 * What the server asks of a worker through the store (decisions 0420, 0421): serial input for a
 * job it runs, numbered in order, bounded, acknowledged and deleted; and health checks of its
 * boards, one per board, claimed once, finished only by the worker running it, lapsed when it
 * never answers. Run by `describeBenchStoreContract` (agents ag_1 and ag_2 present).
 */
export function describeWorkerRequestsContract(name: string, withStore: (body: (store: BenchStore) => Promise<void>) => Promise<void>): void {
  describe(`bench store contract, serial input: ${name}`, () => {
    it('queues input only for a flashing or running job, numbers it in order, and hands it to the worker holding the job', () =>
      withStore(async (store) => {
        await store.createJob(jobRecord(), queueOf(T0));
        expect(await store.serialInput.enqueue('job_1', input('early'), limits(T0))).toEqual({ kind: 'not-running', state: 'queued' });
        expect(await store.serialInput.enqueue('job_missing', input('x'), limits(T0))).toEqual({ kind: 'not-running', state: undefined });
        await claimBy(store, T0 + 1, ['pico'], 'w1');
        expect(await store.serialInput.enqueue('job_1', input('ab'), limits(T0 + 2))).toEqual({ kind: 'queued', seq: 1, workerId: 'w1' });
        // Input queued while it flashed: its worker's first fetch must look (decision 0980).
        expect(await store.markJobRunning('job_1', 'w1', T0 + 3)).toEqual({ kind: 'held', cancelReason: null, inputSent: true });
        const results = await Promise.all(['c', 'd', 'e'].map((s, i) => store.serialInput.enqueue('job_1', input(s), limits(T0 + 4 + i))));
        expect(results.map((r) => (r.kind === 'queued' ? r.seq : r.kind)).sort()).toEqual([2, 3, 4]);
        expect(await store.serialInput.take('job_1', { workerId: 'w2', writtenThroughSeq: 0, maxBytes: 100 })).toEqual({ kind: 'lost' });
        const first = await store.serialInput.take('job_1', { workerId: 'w1', writtenThroughSeq: 0, maxBytes: 100 });
        if (first.kind !== 'held') throw new Error('the worker holding the job lost it');
        expect(first.inputs.map((i) => i.seq)).toEqual([1, 2, 3, 4]);
        expect(first.inputs[0]).toMatchObject({ queuedAtMs: T0 + 2 });
        expect(text(first.inputs[0]!.bytes)).toBe('ab');
        expect(await store.serialInput.writtenThrough('job_1')).toBe(0);
      }));

    it('answers a take on a job never sent input at once, with the reason it was asked to stop, and only to the worker holding it', () =>
      withStore(async (store) => {
        await store.createJob(jobRecord(), queueOf(T0));
        expect(await store.serialInput.take('job_1', { workerId: 'w1', writtenThroughSeq: 0, maxBytes: 100 }), 'a queued job is nobody\'s').toEqual({ kind: 'lost' });
        await claimBy(store, T0 + 1, ['pico'], 'w1');
        expect(await store.serialInput.take('job_1', { workerId: 'w1', writtenThroughSeq: 5, maxBytes: 100 })).toEqual({ kind: 'held', inputs: [], cancelReason: null });
        expect(await store.serialInput.writtenThrough('job_1'), 'acknowledged past what was queued').toBe(0);
        await store.requestJobCancel('job_1', 'the agent has its verdict', T0 + 2);
        expect(await store.serialInput.take('job_1', { workerId: 'w1', writtenThroughSeq: 0, maxBytes: 100 })).toEqual({ kind: 'held', inputs: [], cancelReason: 'the agent has its verdict' });
        expect(await store.serialInput.take('job_1', { workerId: 'w2', writtenThroughSeq: 0, maxBytes: 100 })).toEqual({ kind: 'lost' });
        // With input queued since, the same answer carries the input and the reason.
        expect(await store.serialInput.enqueue('job_1', input('q'), limits(T0 + 3))).toMatchObject({ kind: 'queued', seq: 1 });
        expect(await store.serialInput.take('job_1', { workerId: 'w1', writtenThroughSeq: 0, maxBytes: 100 })).toMatchObject({ kind: 'held', inputs: [{ seq: 1 }], cancelReason: 'the agent has its verdict' });
      }));

    it('acknowledges by number (never past what was queued, never backwards), cuts a take at its byte budget, and bounds what waits', () =>
      withStore(async (store) => {
        await store.createJob(jobRecord(), queueOf(T0));
        await claimBy(store, T0, ['pico'], 'w1');
        for (const s of ['aaaa', 'bbbb', 'cccc']) await store.serialInput.enqueue('job_1', input(s), limits(T0, 12));
        expect(await store.serialInput.enqueue('job_1', input('d'), limits(T0, 12))).toEqual({ kind: 'full', pendingBytes: 12 });
        const cut = await store.serialInput.take('job_1', { workerId: 'w1', writtenThroughSeq: 0, maxBytes: 6 });
        expect(cut.kind === 'held' && cut.inputs.map((i) => text(i.bytes))).toEqual(['aaaa']);
        // Always at least one, even over the budget: an input is never split.
        const over = await store.serialInput.take('job_1', { workerId: 'w1', writtenThroughSeq: 1, maxBytes: 1 });
        expect(over.kind === 'held' && over.inputs.map((i) => i.seq)).toEqual([2]);
        expect(await store.serialInput.writtenThrough('job_1')).toBe(1);
        // Acknowledged input is deleted: room for more.
        expect(await store.serialInput.enqueue('job_1', input('dddd'), limits(T0, 12))).toMatchObject({ kind: 'queued', seq: 4 });
        expect(await store.serialInput.take('job_1', { workerId: 'w1', writtenThroughSeq: 99, maxBytes: 100 })).toEqual({ kind: 'held', inputs: [], cancelReason: null });
        expect(await store.serialInput.writtenThrough('job_1')).toBe(4);
        await store.serialInput.take('job_1', { workerId: 'w1', writtenThroughSeq: 2, maxBytes: 100 });
        expect(await store.serialInput.writtenThrough('job_1')).toBe(4);
      }));

    it('refuses input once the job ended, and deletes what its worker never took as it ends', () =>
      withStore(async (store) => {
        await store.createJob(jobRecord(), queueOf(T0));
        await claimBy(store, T0, ['pico'], 'w1');
        await store.serialInput.enqueue('job_1', input('left'), limits(T0));
        await store.finishJob('job_1', done(T0 + 1), { workerId: 'w1' });
        expect(await store.serialInput.enqueue('job_1', input('late'), limits(T0 + 2))).toEqual({ kind: 'not-running', state: 'done' });
        expect(await store.serialInput.take('job_1', { workerId: 'w1', writtenThroughSeq: 0, maxBytes: 100 })).toEqual({ kind: 'lost' });
        // Deleted with the job's end (decision 0650): the sweep's purge finds nothing left.
        expect(await store.serialInput.purgeEnded()).toBe(0);
      }));

    it('deletes the unread input of a job its worker left (interrupted), and keeps the input of a running job', () =>
      withStore(async (store) => {
        await store.createJob(jobRecord(), queueOf(T0));
        await store.createJob(jobRecord({ jobId: 'job_2', board: 'uno', createdAtMs: T0 + 1 }), queueOf(T0 + 1));
        await claimBy(store, T0, ['pico'], 'w1');
        await claimBy(store, T0, ['uno'], 'w2');
        await store.serialInput.enqueue('job_1', input('left'), limits(T0));
        await store.serialInput.enqueue('job_2', input('kept'), limits(T0));
        expect(await store.releaseWorkerJobs('w1', { reason: 'worker w1 restarted', nowMs: T0 + 2 })).toMatchObject([{ jobId: 'job_1', state: 'failed' }]);
        expect(await store.serialInput.purgeEnded()).toBe(0);
        expect(await store.serialInput.take('job_2', { workerId: 'w2', writtenThroughSeq: 0, maxBytes: 100 })).toMatchObject({ kind: 'held', inputs: [{ seq: 1 }] });
      }));
  });

  describe(`bench store contract, health checks of boards on workers: ${name}`, () => {
    const request = (checkId: string, board = 'pico', workerId = 'w1', nowMs = T0) => ({ checkId, board, workerId, timeoutMs: 1_000, nowMs });
    const passed = { passed: true, uartText: 'ok', elapsedNanos: 5 } as const;

    it('keeps one active check per board, hands it to its worker once, and lets only that worker finish it', () =>
      withStore(async (store) => {
        expect(await store.healthChecks.request(request('hc_1'))).toMatchObject({ kind: 'requested', check: { checkId: 'hc_1', state: 'requested', requestedAtMs: T0 } });
        expect(await store.healthChecks.request(request('hc_2'))).toMatchObject({ kind: 'already-active', check: { checkId: 'hc_1' } });
        await store.healthChecks.request(request('hc_u', 'uno', 'w2'));
        expect((await store.healthChecks.active()).map((c) => c.checkId)).toEqual(['hc_1', 'hc_u']);
        expect(await store.healthChecks.claim('w2', ['pico'], T0 + 1)).toBeUndefined();
        expect(await store.healthChecks.claim('w1', [], T0 + 1)).toBeUndefined();
        const [a, b] = await Promise.all([store.healthChecks.claim('w1', ['pico'], T0 + 1), store.healthChecks.claim('w1', ['pico'], T0 + 1)]);
        expect([a, b].filter((c) => c !== undefined)).toMatchObject([{ checkId: 'hc_1', state: 'running', startedAtMs: T0 + 1 }]);
        expect(await store.healthChecks.finish('hc_1', 'w2', passed, T0 + 2)).toBeUndefined();
        expect(await store.healthChecks.finish('hc_1', 'w1', passed, T0 + 2)).toMatchObject({ state: 'done', finishedAtMs: T0 + 2, outcome: passed });
        expect(await store.healthChecks.finish('hc_1', 'w1', { passed: false, reason: 'again', uartText: '' }, T0 + 3)).toBeUndefined();
        expect(await store.healthChecks.get('hc_1')).toMatchObject({ outcome: passed });
        expect((await store.healthChecks.active()).map((c) => c.checkId)).toEqual(['hc_u']);
        expect(await store.healthChecks.request(request('hc_3', 'pico', 'w1', T0 + 4))).toMatchObject({ kind: 'requested' });
      }));

    it('fails a check its worker never answered once its time and the grace ran out, once; a late outcome changes nothing', () =>
      withStore(async (store) => {
        await store.healthChecks.request(request('hc_1'));
        await store.healthChecks.request(request('hc_2', 'uno', 'w1', T0 + 500));
        await store.healthChecks.claim('w1', ['pico'], T0 + 1);
        expect(await store.healthChecks.expire(T0 + 1_999, { graceMs: 1_000, reason: 'no answer' })).toEqual([]);
        const expired = await Promise.all([
          store.healthChecks.expire(T0 + 2_000, { graceMs: 1_000, reason: 'no answer' }),
          store.healthChecks.expire(T0 + 2_000, { graceMs: 1_000, reason: 'no answer' }),
        ]);
        expect(expired.flat()).toMatchObject([{ checkId: 'hc_1', state: 'done', outcome: { passed: false, reason: 'no answer', uartText: '' } }]);
        expect(await store.healthChecks.finish('hc_1', 'w1', passed, T0 + 2_001)).toBeUndefined();
        expect((await store.healthChecks.active()).map((c) => c.checkId)).toEqual(['hc_2']);
      }));

    it('fails the checks a restarted worker was running, only its own and only running ones; their late outcome changes nothing', () =>
      withStore(async (store) => {
        await store.healthChecks.request(request('hc_run'));
        await store.healthChecks.request(request('hc_wait', 'uno'));
        await store.healthChecks.request(request('hc_other', 'microbit', 'w2'));
        await store.healthChecks.claim('w1', ['pico'], T0 + 1);
        await store.healthChecks.claim('w2', ['microbit'], T0 + 1);
        expect(await store.healthChecks.interrupt('w1', { reason: 'restarted', nowMs: T0 + 2 })).toMatchObject([
          { checkId: 'hc_run', state: 'done', finishedAtMs: T0 + 2, outcome: { passed: false, reason: 'restarted', uartText: '' } },
        ]);
        expect(await store.healthChecks.interrupt('w1', { reason: 'restarted', nowMs: T0 + 3 })).toEqual([]);
        expect(await store.healthChecks.finish('hc_run', 'w1', passed, T0 + 4)).toBeUndefined();
        expect((await store.healthChecks.active()).map((c) => [c.checkId, c.state])).toEqual([
          ['hc_wait', 'requested'],
          ['hc_other', 'running'],
        ]);
      }));

    it("fails every check of a revoked worker, requested and running alike, only its own; none is claimed or finished after", () =>
      withStore(async (store) => {
        await store.healthChecks.request(request('hc_run'));
        await store.healthChecks.request(request('hc_wait', 'uno', 'w1', T0 + 1));
        await store.healthChecks.request(request('hc_other', 'microbit', 'w2'));
        await store.healthChecks.claim('w1', ['pico'], T0 + 2);
        const failed = { passed: false, reason: 'worker w1 was revoked', uartText: '' };
        expect(await store.healthChecks.failAllOf('w1', { reason: 'worker w1 was revoked', nowMs: T0 + 3 })).toMatchObject([
          { checkId: 'hc_run', state: 'done', finishedAtMs: T0 + 3, outcome: failed },
          { checkId: 'hc_wait', state: 'done', finishedAtMs: T0 + 3, outcome: failed },
        ]);
        expect(await store.healthChecks.failAllOf('w1', { reason: 'again', nowMs: T0 + 4 })).toEqual([]);
        expect(await store.healthChecks.claim('w1', ['uno'], T0 + 4)).toBeUndefined();
        expect(await store.healthChecks.finish('hc_run', 'w1', passed, T0 + 4)).toBeUndefined();
        expect((await store.healthChecks.active()).map((c) => c.checkId)).toEqual(['hc_other']);
      }));
  });
}
