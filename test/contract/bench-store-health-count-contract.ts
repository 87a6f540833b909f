import { describe, expect, it } from 'vitest';
import type { BenchStore, HealthCount, JobOutcome } from '../../server/storage/bench/bench-store.js';
import { type BoardHealthRecord, healthyBoardRecord } from '../../server/storage/bench/board-health-store.js';
import { claimBy, jobRecord, sessionRecord, T0 } from './bench-store-contract.js';

const INSTANCE = 'pico.2@w1';
/** Built when a test runs: this file and bench-store-contract.ts import each other, so T0 is not there yet as this module loads. */
const failed = (): JobOutcome => ({ state: 'failed', nowMs: T0 + 5, failure: { kind: 'flash-failed', message: 'Error: open failed' }, uart: null });

/** One more failure, quarantined at the third: the rule InstanceHealth applies, simplified. */
const fail = (now: BoardHealthRecord): BoardHealthRecord => {
  const consecutiveFailures = now.consecutiveFailures + 1;
  return { consecutiveFailures, lastFailure: 'flash', quarantine: now.quarantine ?? (consecutiveFailures >= 3 ? { sinceMs: T0, reason: 'quarantined' } : undefined) };
};

/** Counts every failed job's end against its instance; `countsUnderDebugger` as given. */
const countFailures =
  (countsUnderDebugger = true): HealthCount =>
  (job) =>
    job.state === 'failed' && job.instance !== undefined ? { instance: job.instance, change: fail, countsUnderDebugger } : undefined;

/**
 * A job's end and its instance's health count, one transaction (decision 0930): run by
 * `describeBenchStoreContract` with its fresh-store helper (agents ag_1 and ag_2 present). Before,
 * the count was a transaction of its own after the end; a lost COMMIT answer or a process dying
 * between the two left the end recorded and the count not (decision 0900).
 */
export function describeHealthCountContract(name: string, withStore: (body: (store: BenchStore) => Promise<void>) => Promise<void>): void {
  describe(`bench store contract, health counted with a job's end: ${name}`, () => {
    /** job `jobId` on INSTANCE, queued and claimed by w1. */
    async function claimed(store: BenchStore, jobId: string, over: Parameters<typeof jobRecord>[0] = {}): Promise<void> {
      expect(await store.createJob(jobRecord({ jobId, instance: INSTANCE, ...over }), { maxQueuedPerBoard: 8, nowMs: T0 })).toMatchObject({ kind: 'created' });
      expect(await claimBy(store, T0 + 1, [INSTANCE])).toMatchObject({ jobId });
    }

    it('counts the end that ends the job, once: an outcome recorded again counts nothing', () =>
      withStore(async (store) => {
        await claimed(store, 'job_1');
        const first = await store.finishJob('job_1', failed(), { workerId: 'w1', health: countFailures() });
        expect(first).toMatchObject({ ended: true, health: { instance: INSTANCE, before: healthyBoardRecord, after: { consecutiveFailures: 1 } } });
        const again = await store.finishJob('job_1', failed(), { workerId: 'w1', health: countFailures() });
        expect(again.ended).toBe(false);
        expect(again.health).toBeUndefined();
        expect((await store.boardHealth.get(INSTANCE)).consecutiveFailures).toBe(1);
        // A job the rule says nothing of (a pool of one here) changes no record.
        expect(await store.createJob(jobRecord({ jobId: 'job_2', board: 'uno', createdAtMs: T0 + 1 }), { maxQueuedPerBoard: 8, nowMs: T0 + 1 })).toMatchObject({ kind: 'created' });
        expect(await claimBy(store, T0 + 2, ['uno'])).toMatchObject({ jobId: 'job_2' });
        expect((await store.finishJob('job_2', failed(), { workerId: 'w1', health: countFailures() })).health).toBeUndefined();
        expect(await store.boardHealth.get('uno')).toEqual(healthyBoardRecord);
      }));

    it('commits nothing of the end when its count fails, and ends and counts the job on the next try', () =>
      withStore(async (store) => {
        await claimed(store, 'job_1');
        const broken: HealthCount = () => ({ instance: INSTANCE, countsUnderDebugger: true, change: () => ({ ...fail(healthyBoardRecord), consecutiveFailures: -1 }) });
        await expect(store.finishJob('job_1', failed(), { workerId: 'w1', health: broken })).rejects.toThrow(RangeError);
        expect(await store.getJob('job_1'), 'the end committed without its count').toMatchObject({ state: 'flashing', failure: null });
        expect((await store.listLeases(T0 + 5)).map((l) => l.instance), 'the lease went without the count').toEqual([INSTANCE]);
        expect(await store.boardHealth.get(INSTANCE)).toEqual(healthyBoardRecord);
        expect(await store.finishJob('job_1', failed(), { workerId: 'w1', health: countFailures() })).toMatchObject({ ended: true, health: { after: { consecutiveFailures: 1 } } });
        expect(await store.listLeases(T0 + 5)).toEqual([]);
      }));

    it('counts ends of one instance finished at once one after the other, and quarantines it once', () =>
      withStore(async (store) => {
        // Three sessions' jobs cannot run on one instance at once; three instances' can, each counted against one record.
        const sessions = ['ses_a', 'ses_b', 'ses_c'];
        for (const [i, sessionId] of sessions.entries()) {
          const instance = `pico.${i + 1}@w1`;
          await store.openSession(sessionRecord({ sessionId, instance, expiresAtMs: T0 + 90_000 }), { instances: [instance] });
          await store.createJob(jobRecord({ jobId: `job_${sessionId}`, sessionId, createdAtMs: T0 + i }), { maxQueuedPerBoard: 8, nowMs: T0 });
          expect(await claimBy(store, T0 + 1, [instance])).toMatchObject({ jobId: `job_${sessionId}` });
        }
        const onOneRecord: HealthCount = () => ({ instance: 'pico-record', change: fail, countsUnderDebugger: true });
        const ends = await Promise.all(sessions.map((s) => store.finishJob(`job_${s}`, failed(), { workerId: 'w1', sessionId: s, health: onOneRecord })));
        expect((await store.boardHealth.get('pico-record')).consecutiveFailures, 'ends finished at once lost counts').toBe(3);
        expect(ends.filter((e) => e.health && !e.health.before.quarantine && e.health.after.quarantine)).toHaveLength(1);
      }));

    it('leaves the record as it is for a job that ran under a debugger when the rule says so, and counts the next one', () =>
      withStore(async (store) => {
        await store.openSession(sessionRecord({ instance: INSTANCE }), { instances: [INSTANCE] });
        expect(await store.debugArmings.arm('ses_1', 'ag_1', { idleTimeoutMs: 1_000, maxDebugMs: 2_000 }, T0)).toBe(true);
        await claimed(store, 'job_debug', { sessionId: 'ses_1' });
        expect(await store.debugArmings.claim({ jobId: 'job_debug', sessionId: 'ses_1', agentId: 'ag_1' }, 'w1', null, T0 + 1)).toBeDefined();
        expect(await store.finishJob('job_debug', failed(), { workerId: 'w1', health: countFailures(false) })).toMatchObject({ ended: true });
        expect(await store.boardHealth.get(INSTANCE)).toEqual(healthyBoardRecord);
        await claimed(store, 'job_plain', { sessionId: 'ses_1', createdAtMs: T0 + 2 });
        expect((await store.finishJob('job_plain', failed(), { workerId: 'w1', health: countFailures(false) })).health?.after.consecutiveFailures).toBe(1);
      }));
  });
}
