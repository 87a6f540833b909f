import { describe, expect, it } from 'vitest';
import { benchStoreDialects } from '../../../test/support/bench-store-dialects.js';

/** The debug armings (decision 0663), the same on both databases: an arming is used once, by its agent's job. */
const T0 = 1_700_000_000_000;
const terms = { idleTimeoutMs: 60_000, maxDebugMs: 3_600_000 };
const job = { jobId: 'job_1', sessionId: 'ses_1', agentId: 'ag_1' };

const dialects = benchStoreDialects;

describe.each(dialects)('debug armings: %s', (_name, open) => {
  it('hands the terms to the first claim of the agent’s job in the armed session, records where, and forgets it once', async () => {
    const { store, close } = await open();
    try {
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
    } finally {
      await close();
    }
  });

  it('drops an unused arming when its session ends', async () => {
    const { store, close } = await open();
    try {
      await store.debugArmings.arm('ses_1', 'ag_1', terms, T0);
      await store.debugArmings.disarm('ses_1');
      expect(await store.debugArmings.claim(job, 'w1', null, T0 + 1)).toBeUndefined();
    } finally {
      await close();
    }
  });
});
