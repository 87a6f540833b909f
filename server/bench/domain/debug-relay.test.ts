import { createClock } from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../../core/clock.js';
import type { BenchStore, JobRecord } from '../../storage/bench/bench-store.js';
import { SqliteBenchStore } from '../../storage/bench/sqlite-bench-store.js';
import { BenchError } from './bench-errors.js';
import { DebugRelay, DEBUGGER_WAIT_MS, SESSION_RENEW_MS, type WorkerLeg } from './debug-relay.js';
import { DEBUG_LEG_HOLD_MS } from '../../../wire/worker/debug-schemas.js';
import { duplexPair } from '../../../core/duplex-pair.js';
import type { Duplex } from 'node:stream';

/** The relay on a fake clock, with a debug job of agent a1 claimed by worker w1 (the store is asked about every job, for a stop the relay has not heard of). */
async function relayWithJob() {
  const fake = createClock(0);
  const job = { jobId: 'job_1', agentId: 'a1', board: 'pico', sessionId: 's1', state: 'running' } as JobRecord;
  const real = new SqliteBenchStore(':memory:');
  // An arming needs the agent's active session in the store (decision 0810).
  await real.insertAgent({ agentId: 'a1', label: 'one', tokenSha256: '1'.repeat(64), createdAtMs: 0 });
  await real.openSession({ sessionId: 's1', agentId: 'a1', board: 'pico', state: 'active', idleSeconds: 90, createdAtMs: 0, expiresAtMs: 90_000, endedAtMs: null, lastHeartbeatAtMs: null });
  const { debugArmings } = real;
  const store = { getJob: async (id: string) => (id === job.jobId ? job : undefined), debugArmings } as unknown as BenchStore;
  const relay = new DebugRelay({ clock: clockFromFakeTimers(fake), store, replicaUrl: () => null });
  await relay.arm('a1', 's1', { idleTimeoutMs: 1_000 });
  const terms = await relay.claimed(job, 'w1');
  return { fake, relay, terms, job };
}

/** A worker's leg that writes down how it was answered; `take` hands out one end of a fresh pair. */
function workerLeg(): WorkerLeg & { told: string[]; taken: Duplex[] } {
  const told: string[] = [];
  const taken: Duplex[] = [];
  return {
    told,
    taken,
    take: () => {
      told.push('taken');
      const [, server] = duplexPair();
      taken.push(server);
      return server;
    },
    release: (answer) => void told.push(`${answer.kind}: ${answer.reason}`),
  };
}

describe('the debug relay', () => {
  it('hands the armed session’s next job out with its terms, once', async () => {
    const { relay, terms } = await relayWithJob();
    expect(terms).toEqual({ idleTimeoutMs: 1_000, maxDebugMs: 3_600_000 });
    expect(await relay.claimed({ jobId: 'job_2', agentId: 'a1', board: 'pico', sessionId: 's1' } as JobRecord, 'w1')).toBeUndefined();
  });

  it('pairs a debugger with the held leg at once, and refuses a second debugger while one has the place', async () => {
    const { relay } = await relayWithJob();
    const leg = workerLeg();
    expect(relay.parkWorker('w1', 'job_1', leg)).toBeDefined();
    expect(leg.told).toEqual([]);
    const opened = await relay.open('a1', 'job_1');
    expect(await opened.worker).toBe(leg.taken[0]);
    expect(leg.told).toEqual(['taken']);
    await expect(relay.open('a1', 'job_1')).rejects.toEqual(new BenchError('debugger_attached', 'job job_1 on board pico already has a debugger attached (one at a time)'));
    // The stream ended: the place is free for the next debugger, who waits for the next leg.
    opened.close();
    const next = await relay.open('a1', 'job_1');
    const nextLeg = workerLeg();
    relay.parkWorker('w1', 'job_1', nextLeg);
    expect(await next.worker).toBe(nextLeg.taken[0]);
  });

  it('refuses another worker’s leg and another agent’s debugger', async () => {
    const { relay } = await relayWithJob();
    const leg = workerLeg();
    expect(relay.holds('w2', 'job_1')).toBe(false);
    expect(relay.parkWorker('w2', 'job_1', leg)).toBeUndefined();
    expect(leg.told).toEqual([]);
    await expect(relay.open('a2', 'job_1')).rejects.toMatchObject({ code: 'job_not_found' });
  });

  it(`holds a worker's leg for DEBUG_LEG_HOLD_MS, then tells it to dial again; a newer leg replaces a held one`, async () => {
    const { fake, relay } = await relayWithJob();
    const older = workerLeg();
    relay.parkWorker('w1', 'job_1', older);
    const newer = workerLeg();
    relay.parkWorker('w1', 'job_1', newer);
    expect(older.told).toEqual(['again: replaced by a newer leg of the same worker']);
    fake.tick(DEBUG_LEG_HOLD_MS - 1);
    expect(newer.told).toEqual([]);
    fake.tick(1);
    expect(newer.told).toEqual([`again: no debugger came within ${DEBUG_LEG_HOLD_MS / 1000} s`]);
    // A leg whose connection went is let go without an answer.
    const gone = workerLeg();
    relay.parkWorker('w1', 'job_1', gone)!();
    fake.tick(DEBUG_LEG_HOLD_MS);
    expect(gone.told).toEqual([]);
  });

  it(`a debugger waits for its worker's leg DEBUGGER_WAIT_MS at most, then is refused and its place freed`, async () => {
    const { fake, relay } = await relayWithJob();
    const opened = await relay.open('a1', 'job_1');
    const refused = opened.worker.then(
      () => undefined,
      (err: unknown) => err,
    );
    fake.tick(DEBUGGER_WAIT_MS);
    expect(await refused).toEqual(new BenchError('board_offline', `the worker of job job_1 did not take the debugger within ${DEBUGGER_WAIT_MS / 1000} s (is it still connected to the server?); try again`, { retryAfterSeconds: 1 }));
    // A leg that comes later is held for the next debugger.
    const leg = workerLeg();
    relay.parkWorker('w1', 'job_1', leg);
    const next = await relay.open('a1', 'job_1');
    expect(await next.worker).toBe(leg.taken[0]);
  });

  it('a waiting debugger is paired with the leg that comes; one that went first frees its place', async () => {
    const { fake, relay } = await relayWithJob();
    const gone = await relay.open('a1', 'job_1');
    gone.close();
    const opened = await relay.open('a1', 'job_1');
    fake.tick(DEBUGGER_WAIT_MS - 1);
    const leg = workerLeg();
    relay.parkWorker('w1', 'job_1', leg);
    expect(await opened.worker).toBe(leg.taken[0]);
    fake.tick(1);
    await expect(relay.open('a1', 'job_1')).rejects.toMatchObject({ code: 'debugger_attached' });
  });

  it('renews the session at most every SESSION_RENEW_MS while the debugger is attached', async () => {
    const { fake, relay } = await relayWithJob();
    const opened = await relay.open('a1', 'job_1');
    expect(opened.renewDue()).toBeNull();
    fake.tick(SESSION_RENEW_MS);
    expect(opened.renewDue()).toBe('s1');
    expect(opened.renewDue()).toBeNull();
  });

  /**
   * The two ways a debug job's streams end before the job is forgotten: its end came (`jobEnded`), or
   * it was asked to stop (`jobStopping`: its session ended, it was cancelled) before its worker
   * reported the end. Each: what the open stream reads, what a held leg is told, and what a debugger is told after.
   */
  const endings = [
    {
      how: 'the job ends',
      end: (relay: DebugRelay) => relay.jobEnded('job_1', 'job job_1 is done'),
      streamReads: 'job job_1 is done',
      legTold: 'ended: job job_1 is done',
      waitingRefusal: new BenchError('job_not_debuggable', 'job job_1 ended before its worker took the debugger: job job_1 is done'),
      // The job is forgotten; the store says it is running, so a debugger is told it was not one.
      laterRefusal: { code: 'job_not_debuggable', message: expect.stringContaining('was not submitted for debugging') },
    },
    {
      how: 'the job is asked to stop (its session ended)',
      end: (relay: DebugRelay) => relay.jobStopping('job_1', 'session s1 ended at 1970-01-01T00:00:00.000Z'),
      streamReads: 'job job_1 is stopping: session s1 ended at 1970-01-01T00:00:00.000Z',
      legTold: 'ended: session s1 ended at 1970-01-01T00:00:00.000Z',
      waitingRefusal: new BenchError('job_not_debuggable', 'job job_1 is stopping (session s1 ended at 1970-01-01T00:00:00.000Z): a debugger attaches only while its debug job runs'),
      // Its worker has not reported its end yet, but it takes no debugger.
      laterRefusal: { code: 'job_not_debuggable', message: 'job job_1 is stopping (session s1 ended at 1970-01-01T00:00:00.000Z): a debugger attaches only while its debug job runs' },
    },
  ];

  it.each(endings)('when $how: the stream is told why, a held leg is told to stop dialling, and no leg or debugger is taken after', async ({ end, streamReads, legTold, laterRefusal }) => {
    const { relay } = await relayWithJob();
    relay.parkWorker('w1', 'job_1', workerLeg());
    const opened = await relay.open('a1', 'job_1');
    const ended: string[] = [];
    opened.onEnd((reason) => ended.push(reason));
    const leg = workerLeg();
    relay.parkWorker('w1', 'job_1', leg);
    end(relay);
    expect(ended).toEqual([streamReads]);
    expect(leg.told).toEqual([legTold]);
    expect(relay.holds('w1', 'job_1')).toBe(false);
    expect(relay.parkWorker('w1', 'job_1', workerLeg())).toBeUndefined();
    await expect(relay.open('a1', 'job_1')).rejects.toMatchObject(laterRefusal);
  });

  it.each(endings)('a debugger still waiting for a leg when $how is refused with why', async ({ end, waitingRefusal }) => {
    const { relay } = await relayWithJob();
    const opened = await relay.open('a1', 'job_1');
    end(relay);
    await expect(opened.worker).rejects.toEqual(waitingRefusal);
  });

  it.each(endings)('when $how after the pairing but before the route listens for the end, the listener is told at once', async ({ end, streamReads }) => {
    const { relay } = await relayWithJob();
    relay.parkWorker('w1', 'job_1', workerLeg());
    const opened = await relay.open('a1', 'job_1');
    await opened.worker;
    end(relay);
    const ended: string[] = [];
    opened.onEnd((reason) => ended.push(reason));
    expect(ended).toEqual([streamReads]);
  });

  it('a job that ended is forgotten here', async () => {
    const { relay } = await relayWithJob();
    relay.jobEnded('job_1', 'job job_1 is done');
    expect(relay.has('job_1')).toBe(false);
  });

  it('refuses a debugger on a job the store says was asked to stop (its session ended through another replica)', async () => {
    const { relay, job } = await relayWithJob();
    job.cancelReason = 'session s1 ended at 1970-01-01T00:00:00.000Z';
    await expect(relay.open('a1', 'job_1')).rejects.toMatchObject({ code: 'job_not_debuggable', message: expect.stringContaining('is stopping (session s1 ended') });
  });
});
