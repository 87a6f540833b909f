import { createClock } from '@sinonjs/fake-timers';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { JobLive } from '../../server/bench/domain/job-live.js';
import { waitForJobEnd } from '../../server/bench/domain/job-watch.js';
import type { JobRecord } from '../../server/storage/bench/bench-store.js';
import type { PostgresBenchStore } from '../../server/storage/bench/postgres/postgres-bench-store.js';
import { claimBy, done, jobRecord, sessionRecord, T0 } from '../contract/bench-store-contract.js';
import { until } from '../support/hilbench-processes.js';
import { postgresBenchStores } from '../support/postgres-bench-stores.js';

/**
 * An agent waiting on replica B for a job whose worker reports through replica A (decision 0650):
 * B hears of the end by the database's signal that the job's lease was freed (LISTEN/NOTIFY), not
 * by its poll. The poll is an hour and the fake clock never moves, so only that signal can wake it.
 */

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('a job watched on one replica and finished through another', () => {
  it.each([
    { kind: "the database's signal that the job's lease was freed", inSession: false },
    // A job in a session keeps its session's lease: its end is NOTIFYed by itself (decision 0801).
    { kind: "the database's signal that the job, in a session, ended", inSession: true },
  ])('ends the wait by $kind', { timeout: 60_000 }, async ({ inSession }) => {
    const clock = clockFromFakeTimers(createClock(T0));
    const { stores, close } = await postgresBenchStores(2, { clock });
    cleanups.push(close);
    const [a, b] = stores as [PostgresBenchStore, PostgresBenchStore];
    await a.insertAgent({ agentId: 'ag_1', label: 'one', tokenSha256: '1'.repeat(64), createdAtMs: T0 });
    if (inSession) await a.openSession(sessionRecord({ expiresAtMs: T0 + 90_000 }));
    expect(await a.createJob(jobRecord(inSession ? { sessionId: 'ses_1' } : {}), { maxQueuedPerBoard: 8, nowMs: T0 })).toMatchObject({ kind: 'created' });
    const claimed = await claimBy(a, T0, ['pico'], 'w1');
    expect(claimed).toMatchObject({ jobId: 'job_1' });

    // B's own live events never hear of this job: its worker reports through A.
    const abort = new AbortController();
    let ended: JobRecord | undefined;
    // Given the job as read, the wait subscribes at once: B listens before A finishes the job.
    const waiting = waitForJobEnd({ clock, store: b, live: new JobLive(), pollMs: 3_600_000 }, 'job_1', 7_200_000, abort.signal, claimed).then((job) => (ended = job));
    try {
      await b.sessionQueue.listening();
      await a.finishJob('job_1', done(T0 + 1), { workerId: 'w1' });
      await until("the wait on replica B to end by the database's signal (its poll is an hour away on a clock that never moves)", () => ended !== undefined, 20_000);
      expect(ended).toMatchObject({ jobId: 'job_1', state: 'done' });
    } finally {
      abort.abort();
      await waiting;
    }
  });
});
