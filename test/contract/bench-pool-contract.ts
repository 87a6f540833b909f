import { describe, expect, it } from 'vitest';
import type { BenchStore } from '../../server/storage/bench/bench-store.js';
import { claimBy, done, jobRecord, sessionRecord, T0 } from './bench-store-contract.js';

/** The instances of the pool `pico` in these tests: two on worker w1, one on w2 (decision 0510). */
const POOL = ['pico.1@w1', 'pico.2@w1', 'pico.1@w2'] as const;
const queueOf = (nowMs: number, instances: readonly string[] = POOL) => ({ maxQueuedPerBoard: 8, nowMs, instances });

/**
 * Board pools in the store (issue 27, decision 0510): leases are per instance, a session holds one
 * instance, a session-less job leases one, claims start one job per instance at a time. Run by
 * `describeBenchStoreContract` with its fresh-store helper (agents ag_1 and ag_2 present).
 */
export function describePoolContract(name: string, withStore: (body: (store: BenchStore) => Promise<void>) => Promise<void>): void {
  describe(`bench store contract, board pools: ${name}`, () => {
    it('gives each session the first free instance of the pool, one lease per instance, and refuses when all are leased', () =>
      withStore(async (store) => {
        const opened = [];
        for (const [i, agentId] of ['ag_1', 'ag_2', 'ag_1'].entries()) {
          const result = await store.openSession(sessionRecord({ sessionId: `ses_${i}`, agentId, expiresAtMs: T0 + 90_000 + i }), { instances: POOL });
          expect(result.kind).toBe('opened');
          opened.push(result.kind === 'opened' ? result.session.instance : undefined);
        }
        expect(opened).toEqual([...POOL]);
        // Every instance leased: the lease that frees first is named.
        expect(await store.openSession(sessionRecord({ sessionId: 'ses_x', agentId: 'ag_2' }), { instances: POOL })).toMatchObject({
          kind: 'board-leased',
          lease: { board: 'pico', instance: 'pico.1@w1', holder: { kind: 'session', sessionId: 'ses_0' }, expiresAtMs: T0 + 90_000 },
        });
        expect((await store.listLeases(T0)).map((l) => [l.board, l.instance])).toEqual(POOL.map((i) => ['pico', i]).sort());
        expect((await store.getSession('ses_1', T0))!.instance).toBe('pico.2@w1');
        // Ending one frees exactly its instance, which the next session gets.
        await store.endSession('ses_1', T0 + 1);
        expect(await store.openSession(sessionRecord({ sessionId: 'ses_y', agentId: 'ag_2', createdAtMs: T0 + 2 }), { instances: POOL })).toMatchObject({
          kind: 'opened',
          session: { instance: 'pico.2@w1' },
        });
      }));

    it('opens a session on an instance asked for explicitly, and refuses it while someone holds it', () =>
      withStore(async (store) => {
        expect(await store.openSession(sessionRecord({ instance: 'pico.1@w2' }), { instances: POOL })).toMatchObject({ kind: 'opened', session: { instance: 'pico.1@w2' } });
        expect(await store.openSession(sessionRecord({ sessionId: 'ses_2', agentId: 'ag_2', instance: 'pico.1@w2' }), { instances: POOL })).toMatchObject({
          kind: 'board-leased',
          lease: { instance: 'pico.1@w2', agentId: 'ag_1' },
        });
        // The others are free.
        expect(await store.openSession(sessionRecord({ sessionId: 'ses_3', agentId: 'ag_2' }), { instances: POOL })).toMatchObject({ session: { instance: 'pico.1@w1' } });
      }));

    it("runs a session's jobs on its instance, and a session-less job on a free instance it leases", () =>
      withStore(async (store) => {
        await store.openSession(sessionRecord(), { instances: POOL });
        expect(await store.createJob(jobRecord({ jobId: 'job_s', sessionId: 'ses_1' }), queueOf(T0))).toMatchObject({ kind: 'created', job: { instance: 'pico.1@w1' } });
        expect(await store.createJob(jobRecord({ jobId: 'job_x', sessionId: 'ses_1', instance: 'pico.2@w1' }), queueOf(T0))).toMatchObject({ kind: 'session-other-board' });
        expect(await store.createJob(jobRecord({ jobId: 'job_free', agentId: 'ag_2' }), queueOf(T0))).toMatchObject({ kind: 'created', job: { instance: 'pico.2@w1' } });
        expect(await store.createJob(jobRecord({ jobId: 'job_own', agentId: 'ag_2', instance: 'pico.2@w1' }), queueOf(T0))).toMatchObject({
          kind: 'board-leased',
          lease: { holder: { kind: 'job', jobId: 'job_free' } },
        });
        expect((await store.getJob('job_free'))!.instance).toBe('pico.2@w1');
        expect((await store.listLeases(T0)).map((l) => l.instance)).toEqual(['pico.1@w1', 'pico.2@w1']);
      }));

    it('starts one job per instance at a time, instances of one pool in parallel, oldest first on each', () =>
      withStore(async (store) => {
        await store.openSession(sessionRecord({ instance: 'pico.1@w1' }));
        await store.openSession(sessionRecord({ sessionId: 'ses_2', agentId: 'ag_2', instance: 'pico.2@w1' }));
        for (const [jobId, sessionId, at] of [['job_a1', 'ses_1', 0], ['job_b1', 'ses_2', 1], ['job_a2', 'ses_1', 2], ['job_b2', 'ses_2', 3]] as const) {
          const agentId = sessionId === 'ses_1' ? 'ag_1' : 'ag_2';
          await store.createJob(jobRecord({ jobId, agentId, sessionId, createdAtMs: T0 + at }), queueOf(T0 + at));
        }
        // Four workers asking at once for both instances: exactly one job per instance starts.
        const claims = await Promise.all(['w1', 'w2', 'w3', 'w4'].map((w) => claimBy(store, T0 + 5, ['pico.1@w1', 'pico.2@w1'], w)));
        expect(claims.filter((c) => c !== undefined).map((c) => c!.jobId).sort()).toEqual(['job_a1', 'job_b1']);
        expect((await store.instanceActivity()).get('pico.1@w1')).toEqual({ queued: 1, active: 1 });
        const a1 = claims.find((c) => c?.jobId === 'job_a1')!;
        await store.finishJob('job_a1', done(T0 + 6), { workerId: a1.workerId! });
        // The next of that instance, not the other instance's.
        expect(await claimBy(store, T0 + 7, ['pico.1@w1', 'pico.2@w1'], 'w9')).toMatchObject({ jobId: 'job_a2', instance: 'pico.1@w1' });
        expect(await claimBy(store, T0 + 7, ['pico.1@w1', 'pico.2@w1'], 'w9')).toBeUndefined();
      }));

    it('hands each instance to one of many racing sessions', () =>
      withStore(async (store) => {
        const results = await Promise.all(
          Array.from({ length: 8 }, (_, i) => store.openSession(sessionRecord({ sessionId: `ses_r${i}`, agentId: i % 2 ? 'ag_1' : 'ag_2' }), { instances: POOL })),
        );
        const got = results.flatMap((r) => (r.kind === 'opened' ? [r.session.instance] : []));
        expect(got.sort()).toEqual([...POOL].sort());
        expect(results.filter((r) => r.kind === 'board-leased')).toHaveLength(5);
      }));
  });
}
