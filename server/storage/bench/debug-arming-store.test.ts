import { describe, expect, it } from 'vitest';
import { T0, jobRecord, sessionRecord } from '../../../test/contract/bench-store-contract.js';
import { benchStoreDialects } from '../../../test/support/bench-store-dialects.js';
import type { SqlBenchStore } from './sql-bench-store.js';

/** The debug armings (decisions 0663, 0810), the same on both databases: an arming is used once, by its agent's job, and no row outlives what it belongs to. */
const terms = { idleTimeoutMs: 60_000, maxDebugMs: 3_600_000 };
const job = { jobId: 'job_1', sessionId: 'ses_1', agentId: 'ag_1' };

const dialects = benchStoreDialects;

/** A fresh store of the dialect with agents ag_1 and ag_2, and ag_1's session ses_1 on pico (idle 10 s: due at T0 + 10 s). */
function withSession(open: (typeof dialects)[number][1]) {
  return async (body: (store: SqlBenchStore) => Promise<void>) => {
    const { store, close } = await open();
    try {
      for (const n of [1, 2]) await store.insertAgent({ agentId: `ag_${n}`, label: `agent ${n}`, tokenSha256: String(n).repeat(64), createdAtMs: T0 });
      const opened = await store.openSession(sessionRecord({ idleSeconds: 10, expiresAtMs: T0 + 10_000 }));
      expect(opened.kind).toBe('opened');
      await body(store);
    } finally {
      await close();
    }
  };
}

/** ses_1's job `jobId` queued, claimed by worker w1 with a claim of 30 s, and made a debug job by its arming. */
async function debugJob(store: SqlBenchStore, jobId: string, nowMs: number): Promise<void> {
  await store.createJob(jobRecord({ jobId, sessionId: 'ses_1', createdAtMs: nowMs }), { maxQueuedPerBoard: 8, nowMs });
  expect(await store.debugArmings.arm('ses_1', 'ag_1', terms, nowMs)).toBe(true);
  expect(await store.claimJob({ workerId: 'w1', boards: ['pico'], nowMs, claimMs: 30_000 })).toMatchObject({ jobId });
  expect(await store.debugArmings.claim({ jobId, sessionId: 'ses_1', agentId: 'ag_1' }, 'w1', null, nowMs)).toEqual(terms);
}

describe.each(dialects)('debug armings: %s', (_name, open) => {
  it('hands the terms to the first claim of the agent’s job in the armed session, records where, and forgets it once', () =>
    withSession(open)(async (store) => {
      const armings = store.debugArmings;
      await armings.arm('ses_1', 'ag_1', { idleTimeoutMs: 1_000, maxDebugMs: 3_600_000 }, T0);
      await armings.arm('ses_1', 'ag_1', terms, T0 + 1); // arming again replaces the terms
      expect(await armings.claim({ ...job, agentId: 'ag_2' }, 'w1', null, T0 + 2)).toBeUndefined();
      expect(await armings.claim(job, 'w1', 'http://10.0.0.5:8080', T0 + 2)).toEqual(terms);
      expect(await armings.claim({ ...job, jobId: 'job_2' }, 'w1', null, T0 + 3)).toBeUndefined();
      expect(await armings.job('job_1')).toEqual({ jobId: 'job_1', agentId: 'ag_1', workerId: 'w1', terms, replicaUrl: 'http://10.0.0.5:8080' });
      expect(await armings.job('job_2')).toBeUndefined();
      expect(await armings.forgetJob('job_1')).toBe(true);
      expect(await armings.forgetJob('job_1')).toBe(false);
      expect(await armings.job('job_1')).toBeUndefined();
    }));

  it('arms only the agent’s active session', () =>
    withSession(open)(async (store) => {
      expect(await store.debugArmings.arm('ses_1', 'ag_2', terms, T0)).toBe(false);
      expect(await store.debugArmings.arm('ses_nope', 'ag_1', terms, T0)).toBe(false);
      await store.endSession('ses_1', T0 + 1);
      expect(await store.debugArmings.arm('ses_1', 'ag_1', terms, T0 + 2)).toBe(false);
      expect(await store.debugArmings.claim(job, 'w1', null, T0 + 3)).toBeUndefined();
    }));

  it('drops an unused arming in the transaction that ends its session', () =>
    withSession(open)(async (store) => {
      await store.debugArmings.arm('ses_1', 'ag_1', terms, T0);
      await store.endSession('ses_1', T0 + 1);
      expect(await store.debugArmings.claim(job, 'w1', null, T0 + 2)).toBeUndefined();
    }));

  it('drops an unused arming in the sweep that expires its session', () =>
    withSession(open)(async (store) => {
      await store.debugArmings.arm('ses_1', 'ag_1', terms, T0);
      expect((await store.expireSessions(T0 + 10_000)).map((s) => s.sessionId)).toEqual(['ses_1']);
      expect(await store.debugArmings.claim(job, 'w1', null, T0 + 10_001)).toBeUndefined();
    }));

  it('deletes a debug job’s row in the sweep that fails it: a lapsed claim, or its worker released', () =>
    withSession(open)(async (store) => {
      await debugJob(store, 'job_lapsed', T0);
      expect((await store.failLapsedClaims(T0 + 30_000)).map((j) => j.jobId)).toEqual(['job_lapsed']);
      expect(await store.debugArmings.job('job_lapsed')).toBeUndefined();
      await debugJob(store, 'job_released', T0 + 30_001);
      expect((await store.releaseWorkerJobs('w1', { reason: 'worker w1 announced itself again', nowMs: T0 + 30_002 })).map((j) => j.jobId)).toEqual(['job_released']);
      expect(await store.debugArmings.job('job_released')).toBeUndefined();
    }));
});
