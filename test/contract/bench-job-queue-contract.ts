import { describe, expect, it } from 'vitest';
import type { BenchStore } from '../../server/storage/bench/bench-store.js';
import { claimBy, done, jobRecord, sessionRecord, T0, uartOf } from './bench-store-contract.js';

const queueOf = (nowMs: number) => ({ maxQueuedPerBoard: 8, nowMs });

/**
 * The job queue part of the store contract: claims by workers (several workers or replicas at
 * once), FIFO per board, lapsed claims of vanished workers, cancellation requests. Run by
 * `describeBenchStoreContract` with its fresh-store helper (agents ag_1 and ag_2 present).
 */
export function describeJobQueueContract(name: string, withStore: (body: (store: BenchStore) => Promise<void>) => Promise<void>): void {
  describe(`bench store contract, job queue: ${name}`, () => {
    it('hands out the oldest queued job of the boards asked for, each job once, FIFO per board', () =>
      withStore(async (store) => {
        await store.openSession(sessionRecord());
        await store.createJob(jobRecord({ jobId: 'job_p1', sessionId: 'ses_1', createdAtMs: T0 }), queueOf(T0));
        await store.createJob(jobRecord({ jobId: 'job_u1', board: 'uno', createdAtMs: T0 + 1 }), queueOf(T0));
        await store.createJob(jobRecord({ jobId: 'job_p2', sessionId: 'ses_1', createdAtMs: T0 + 2 }), queueOf(T0));
        expect(await claimBy(store, T0 + 3, ['netduinoplus2'])).toBeUndefined();
        expect(await claimBy(store, T0 + 3, [])).toBeUndefined();
        // Two workers asking for every board at once: different jobs, never the same board twice.
        const [a, b] = await Promise.all([claimBy(store, T0 + 3, ['pico', 'uno'], 'w1'), claimBy(store, T0 + 3, ['pico', 'uno'], 'w2')]);
        expect([a!.jobId, b!.jobId].sort()).toEqual(['job_p1', 'job_u1']);
        expect(await claimBy(store, T0 + 4, ['pico', 'uno'], 'w3')).toBeUndefined();
        const picoWorker = a!.jobId === 'job_p1' ? 'w1' : 'w2';
        await store.finishJob('job_p1', done(T0 + 5), { workerId: picoWorker });
        expect(await claimBy(store, T0 + 6, ['pico', 'uno'], 'w3')).toMatchObject({ jobId: 'job_p2', workerId: 'w3' });
      }));

    it('skips an instance under a health check, requested or running, until the check is done (decision 0801)', () =>
      withStore(async (store) => {
        await store.createJob(jobRecord({ jobId: 'job_p' }), queueOf(T0));
        await store.createJob(jobRecord({ jobId: 'job_u', board: 'uno', createdAtMs: T0 + 1 }), queueOf(T0));
        await store.healthChecks.request({ checkId: 'hc_1', board: 'pico', workerId: 'w1', timeoutMs: 1_000, nowMs: T0 });
        expect(await claimBy(store, T0 + 2, ['pico'])).toBeUndefined();
        expect(await claimBy(store, T0 + 2, ['pico', 'uno'])).toMatchObject({ jobId: 'job_u' });
        expect(await store.healthChecks.claim('w1', ['pico'], T0 + 3)).toMatchObject({ checkId: 'hc_1', state: 'running' });
        expect(await claimBy(store, T0 + 4, ['pico'])).toBeUndefined();
        await store.healthChecks.finish('hc_1', 'w1', { passed: true, uartText: 'ok', elapsedNanos: 1 }, T0 + 5);
        expect(await claimBy(store, T0 + 6, ['pico'])).toMatchObject({ jobId: 'job_p' });
      }));

    it("hands a worker's claim a job first, else a health check requested of it, else nothing (decision 0860)", () =>
      withStore(async (store) => {
        const task = (nowMs: number, boards: readonly string[], checkBoards: readonly string[], workerId = 'w1') => store.claimTask({ workerId, boards, checkBoards, nowMs, claimMs: null });
        expect(await task(T0, ['pico'], ['pico'])).toBeUndefined();
        await store.createJob(jobRecord({ jobId: 'job_u', board: 'uno' }), queueOf(T0));
        await store.healthChecks.request({ checkId: 'hc_1', board: 'pico', workerId: 'w1', timeoutMs: 1_000, nowMs: T0 });
        // Another worker's check is not this worker's; a job on another board comes before this one's check.
        expect(await task(T0 + 1, ['pico'], ['pico'], 'w2')).toBeUndefined();
        expect(await task(T0 + 1, ['pico', 'uno'], ['pico', 'uno'])).toMatchObject({ job: { jobId: 'job_u', workerId: 'w1', state: 'flashing' } });
        expect(await task(T0 + 2, ['pico', 'uno'], ['pico', 'uno'])).toMatchObject({ check: { checkId: 'hc_1', state: 'running', startedAtMs: T0 + 2 } });
        expect(await task(T0 + 3, ['pico', 'uno'], ['pico', 'uno'])).toBeUndefined();
        // With every instance quarantined (no boards to claim on), a check is still handed out.
        await store.healthChecks.request({ checkId: 'hc_2', board: 'uno', workerId: 'w1', timeoutMs: 1_000, nowMs: T0 + 4 });
        expect(await task(T0 + 5, [], ['uno'])).toMatchObject({ check: { checkId: 'hc_2' } });
        // A revoked worker's claim takes no job.
        await store.workers.insert({ workerId: 'w3', label: 'three', tokenSha256: '3'.repeat(64), createdAtMs: T0 });
        await store.workers.revoke('w3', T0 + 6);
        await store.createJob(jobRecord({ jobId: 'job_n', board: 'netduinoplus2', createdAtMs: T0 + 6 }), queueOf(T0 + 6));
        expect(await task(T0 + 7, ['netduinoplus2'], ['netduinoplus2'], 'w3')).toBeUndefined();
        expect(await task(T0 + 7, ['netduinoplus2'], ['netduinoplus2'])).toMatchObject({ job: { jobId: 'job_n' } });
      }));

    it('queues no job on a board under a health check, requested or running, and says since when (decision 0860)', () =>
      withStore(async (store) => {
        await store.healthChecks.request({ checkId: 'hc_1', board: 'pico', workerId: 'w1', timeoutMs: 1_000, nowMs: T0 });
        expect(await store.createJob(jobRecord(), queueOf(T0 + 1))).toEqual({ kind: 'board-health-check', requestedAtMs: T0 });
        await store.openSession(sessionRecord({ board: 'uno' }));
        // A check of another board, or of an instance of a pool (the claim skips that one), holds nothing here.
        await store.healthChecks.request({ checkId: 'hc_2', board: 'uno.1@w1', workerId: 'w1', timeoutMs: 1_000, nowMs: T0 });
        expect((await store.createJob(jobRecord({ jobId: 'job_s', board: 'uno', sessionId: 'ses_1' }), queueOf(T0 + 1))).kind).toBe('created');
        expect(await store.healthChecks.claim('w1', ['pico'], T0 + 2)).toMatchObject({ checkId: 'hc_1' });
        expect(await store.createJob(jobRecord(), queueOf(T0 + 3))).toEqual({ kind: 'board-health-check', requestedAtMs: T0 });
        await store.healthChecks.finish('hc_1', 'w1', { passed: true, uartText: 'ok', elapsedNanos: 1 }, T0 + 4);
        expect((await store.createJob(jobRecord(), queueOf(T0 + 5))).kind).toBe('created');
        expect(await store.getJob('job_1')).toMatchObject({ state: 'queued' });
      }));

    it("ends a job with its session passed as the caller read it, and a session passed wrongly changes nothing but the store's own look (decision 0860)", () =>
      withStore(async (store) => {
        await store.openSession(sessionRecord({ idleSeconds: 10, expiresAtMs: T0 + 10_000 }));
        await store.createJob(jobRecord({ jobId: 'job_s', sessionId: 'ses_1' }), queueOf(T0));
        await store.createJob(jobRecord({ jobId: 'job_u', board: 'uno' }), queueOf(T0));
        await claimBy(store, T0 + 1, ['pico', 'uno']);
        await claimBy(store, T0 + 1, ['pico', 'uno']);
        // Passed wrongly (a bug): the job still ends once, its session renewed, its lease kept.
        expect(await store.finishJob('job_s', done(T0 + 2), { workerId: 'w1', sessionId: null })).toMatchObject({ job: { state: 'done' }, ended: true });
        expect(await store.getSession('ses_1', T0 + 2)).toMatchObject({ state: 'active', expiresAtMs: T0 + 10_002 });
        expect(await store.finishJob('job_u', done(T0 + 3), { workerId: 'w1', sessionId: 'ses_1' })).toMatchObject({ job: { state: 'done' }, ended: true });
        expect(await store.finishJob('job_u', done(T0 + 4), { workerId: 'w1', sessionId: null })).toMatchObject({ job: { state: 'done', finishedAtMs: T0 + 3 }, ended: false });
        // Its lease is freed: another agent takes the board.
        expect((await store.openSession(sessionRecord({ sessionId: 'ses_2', agentId: 'ag_2', board: 'uno', createdAtMs: T0 + 5 }))).kind).toBe('opened');
      }));

    it('fails a job as interrupted, once, when its worker stops renewing its claim; renewals keep it', () =>
      withStore(async (store) => {
        await store.openSession(sessionRecord({ idleSeconds: 10, expiresAtMs: T0 + 10_000 }));
        await store.createJob(jobRecord({ sessionId: 'ses_1' }), queueOf(T0));
        expect(await claimBy(store, T0, ['pico'], 'remote', 30_000)).toMatchObject({ jobId: 'job_1' });
        await store.markJobRunning('job_1', 'remote', T0 + 1);
        expect(await store.renewJobClaim('job_1', 'remote', { nowMs: T0 + 20_000, claimMs: 30_000, uart: uartOf('boot\n') })).toEqual({
          kind: 'held',
          cancelReason: null,
        });
        expect(await store.failLapsedClaims(T0 + 49_999)).toEqual([]);
        const [lost, again] = await Promise.all([store.failLapsedClaims(T0 + 50_000), store.failLapsedClaims(T0 + 50_000)]);
        const failed = [...lost, ...again];
        expect(failed).toHaveLength(1);
        expect(failed[0]).toMatchObject({ jobId: 'job_1', state: 'failed', failure: { kind: 'interrupted' }, finishedAtMs: T0 + 50_000 });
        expect(failed[0]!.failure!.message).toMatch(/^worker remote stopped answering while this job was running/);
        expect(new TextDecoder().decode(failed[0]!.uart!.bytes)).toBe('boot\n');
        // The board is the session's again, and its idle time restarts from the failure.
        expect(await store.getSession('ses_1', T0 + 50_000)).toMatchObject({ state: 'active', expiresAtMs: T0 + 60_000 });
        // The vanished worker's late report changes nothing.
        expect(await store.renewJobClaim('job_1', 'remote', { nowMs: T0 + 50_001, claimMs: 30_000 })).toEqual({ kind: 'lost', state: 'failed' });
        expect(await store.finishJob('job_1', done(T0 + 50_002), { workerId: 'remote' })).toMatchObject({ job: { state: 'failed' }, ended: false });
        // A claim without expiry (a worker in the server's process) never lapses.
        await store.createJob(jobRecord({ jobId: 'job_2', sessionId: 'ses_1', createdAtMs: T0 + 50_003 }), queueOf(T0 + 50_003));
        await claimBy(store, T0 + 50_003);
        expect(await store.failLapsedClaims(T0 + 10_000_000)).toEqual([]);
      }));

    it('keeps the UART saved while a job ran when its worker reports a failure without a capture', () =>
      withStore(async (store) => {
        await store.createJob(jobRecord(), queueOf(T0));
        await claimBy(store, T0, ['pico'], 'remote', 30_000);
        await store.renewJobClaim('job_1', 'remote', { nowMs: T0 + 1_000, claimMs: 30_000, uart: uartOf('boot\n') });
        const { job: failed } = await store.finishJob('job_1', { state: 'failed', nowMs: T0 + 2_000, failure: { kind: 'internal', message: 'the engine died' } }, { workerId: 'remote' });
        expect(failed).toMatchObject({ state: 'failed', failure: { kind: 'internal' } });
        expect(new TextDecoder().decode(failed.uart?.bytes), 'a failure without a capture wiped the UART the server had saved').toBe('boot\n');
      }));

    it('moves lapsing claims forward, never back, and leaves claims without expiry and finished jobs alone', () =>
      withStore(async (store) => {
        await store.createJob(jobRecord({ jobId: 'job_r' }), queueOf(T0));
        await store.createJob(jobRecord({ jobId: 'job_u', board: 'uno', createdAtMs: T0 + 1 }), queueOf(T0));
        await store.createJob(jobRecord({ jobId: 'job_l', board: 'netduinoplus2', createdAtMs: T0 + 2 }), queueOf(T0));
        await claimBy(store, T0, ['pico'], 'remote', 30_000);
        await claimBy(store, T0, ['uno'], 'far', 300_000);
        await claimBy(store, T0, ['netduinoplus2'], 'local', null);
        // Twice at once, as replicas starting together would.
        const moved = await Promise.all([store.extendClaims(T0 + 100_000), store.extendClaims(T0 + 100_000)]);
        expect(moved[0] + moved[1]).toBe(1);
        expect(await store.failLapsedClaims(T0 + 99_999)).toEqual([]);
        expect((await store.failLapsedClaims(T0 + 100_000)).map((j) => j.jobId)).toEqual(['job_r']);
        // A claim lasting beyond the new time keeps its own.
        expect(await store.extendClaims(T0 + 200_000)).toBe(0);
        expect(await store.failLapsedClaims(T0 + 299_999)).toEqual([]);
        expect((await store.failLapsedClaims(T0 + 300_000)).map((j) => j.jobId)).toEqual(['job_u']);
        expect(await store.failLapsedClaims(T0 + 10_000_000)).toEqual([]);
      }));

    it('cancels a queued job at once and asks a running one to stop; a finished one is left alone', () =>
      withStore(async (store) => {
        await store.createJob(jobRecord({ jobId: 'job_q', board: 'uno' }), queueOf(T0));
        const cancelled = await store.requestJobCancel('job_q', 'agent asked', T0 + 1);
        expect(cancelled).toMatchObject({ state: 'failed', failure: { kind: 'cancelled', message: 'cancelled before it started: agent asked' } });
        expect(await store.listLeases(T0 + 1)).toEqual([]);
        expect(await claimBy(store, T0 + 2, ['uno'])).toBeUndefined();

        await store.createJob(jobRecord({ jobId: 'job_r' }), queueOf(T0 + 2));
        await claimBy(store, T0 + 2);
        expect(await store.requestJobCancel('job_r', 'first reason', T0 + 3)).toMatchObject({ state: 'flashing', cancelReason: 'first reason' });
        await store.requestJobCancel('job_r', 'second reason', T0 + 4);
        expect(await store.markJobRunning('job_r', 'w1', T0 + 5)).toEqual({ kind: 'held', cancelReason: 'first reason', inputSent: false });
        await store.finishJob('job_r', { state: 'failed', nowMs: T0 + 6, failure: { kind: 'cancelled', message: 'first reason' } }, { workerId: 'w1' });
        expect(await store.requestJobCancel('job_r', 'too late', T0 + 7)).toMatchObject({ state: 'failed', failure: { message: 'first reason' } });
        expect(await store.requestJobCancel('job_missing', 'x', T0 + 8)).toBeUndefined();
      }));

    it('fails jobs that waited in the queue past the cutoff as unavailable, freeing their leases', () =>
      withStore(async (store) => {
        await store.openSession(sessionRecord({ idleSeconds: 10, expiresAtMs: T0 + 10_000 }));
        await store.createJob(jobRecord({ jobId: 'job_old', board: 'uno', createdAtMs: T0 }), queueOf(T0));
        await store.createJob(jobRecord({ jobId: 'job_session', sessionId: 'ses_1', createdAtMs: T0 + 1 }), queueOf(T0));
        await store.createJob(jobRecord({ jobId: 'job_young', sessionId: 'ses_1', createdAtMs: T0 + 500 }), queueOf(T0));
        const failed = await store.failOverdueQueuedJobs(T0 + 1, { reason: 'no worker started it within 900 s', nowMs: T0 + 900_000 });
        expect(failed.map((j) => j.jobId)).toEqual(['job_old', 'job_session']);
        expect(failed[0]).toMatchObject({ state: 'failed', failure: { kind: 'unavailable', message: 'no worker started it within 900 s' }, finishedAtMs: T0 + 900_000 });
        expect((await store.getJob('job_young'))!.state).toBe('queued');
        expect((await store.listLeases(T0 + 900_000)).map((l) => l.board)).toEqual(['pico']);
        expect(await store.failOverdueQueuedJobs(T0 + 1, { reason: 'again', nowMs: T0 + 900_001 })).toEqual([]);
      }));

    it('releases a restarted worker’s jobs except those it still runs', () =>
      withStore(async (store) => {
        await store.createJob(jobRecord({ jobId: 'job_a', board: 'pico' }), queueOf(T0));
        await store.createJob(jobRecord({ jobId: 'job_b', board: 'uno', createdAtMs: T0 + 1 }), queueOf(T0));
        await claimBy(store, T0 + 2, ['pico', 'uno'], 'w1', 30_000);
        await claimBy(store, T0 + 2, ['pico', 'uno'], 'w1', 30_000);
        const released = await store.releaseWorkerJobs('w1', { reason: 'worker w1 announced itself again', nowMs: T0 + 3, keep: ['job_b'] });
        expect(released.map((j) => j.jobId)).toEqual(['job_a']);
        expect(released[0]!.failure!.message).toBe('worker w1 announced itself again while this job was flashing; submit it again');
        expect((await store.getJob('job_b'))!.state).toBe('flashing');
        expect(await store.releaseWorkerJobs('w2', { reason: 'x', nowMs: T0 + 4 })).toEqual([]);
      }));
  });
}
