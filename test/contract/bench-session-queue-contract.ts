import { describe, expect, it } from 'vitest';
import type { BenchStore } from '../../server/storage/bench/bench-store.js';
import { type SessionWaiter, sessionJobEndedId } from '../../server/storage/bench/session-queue-store.js';
import { claimBy, done, jobRecord, sessionRecord, T0 } from './bench-store-contract.js';

const ALIVE_MS = 10_000;
const waiter = (waiterId: string, over: Partial<SessionWaiter> = {}): SessionWaiter => ({
  waiterId,
  queue: 'pico',
  pool: 'pico',
  agentId: 'ag_1',
  enqueuedAtMs: T0,
  aliveUntilMs: T0 + ALIVE_MS,
  ...over,
});

/**
 * Listens for the first change `store` reports for `id` (resolving `seen`, or rejecting it naming
 * what it waited for after `boundMs` of host time, under the test's own timeout so this failure is the one reported); settles once the store reports changes. The
 * bound is time, not event-loop turns: a change PostgreSQL reports (a NOTIFY) comes after round
 * trips that a loaded machine stretches while the turns run on.
 */
async function nextChange(store: BenchStore, id: string, what: string, boundMs = 10_000): Promise<{ seen: Promise<void>; stop: () => void }> {
  let stop: () => void = () => undefined;
  const seen = new Promise<void>((resolve, reject) => {
    let done = false;
    const unsubscribe = store.sessionQueue.onChange((changed) => {
      if (changed !== id || done) return;
      stop();
      resolve();
    });
    const bound = setTimeout(() => {
      if (done) return;
      stop();
      reject(new Error(`no change of ${id} reported in ${boundMs} ms: ${what}`));
    }, boundMs);
    stop = () => {
      done = true;
      clearTimeout(bound);
      unsubscribe();
    };
  });
  await store.sessionQueue.listening();
  return { seen, stop };
}

/**
 * The session queue in the store (decision 0555), run by `describeBenchStoreContract` with its
 * fresh-store helper (agents ag_1 and ag_2 present): first come first served per queue, ghosts
 * never counted, leaving idempotent, events when a waiter leaves or a lease is freed.
 */
export function describeSessionQueueContract(name: string, withStore: (body: (store: BenchStore) => Promise<void>) => Promise<void>): void {
  describe(`bench store contract, session queue: ${name}`, () => {
    it('keeps waiters first come first served per queue, and answers each place and line', () =>
      withStore(async (store) => {
        const q = store.sessionQueue;
        const seqA = await q.enqueue(waiter('w_a'));
        const seqB = await q.enqueue(waiter('w_b', { agentId: 'ag_2' }));
        await q.enqueue(waiter('w_other', { queue: 'uno', pool: 'uno' }));
        const seqC = await q.enqueue(waiter('w_c'));
        expect(seqA).toBeLessThan(seqB);
        expect(seqB).toBeLessThan(seqC);
        expect(await q.turn('w_a', T0)).toEqual({ position: 1, ahead: [] });
        expect(await q.turn('w_b', T0)).toEqual({ position: 2, ahead: ['pico'] });
        expect(await q.turn('w_c', T0)).toEqual({ position: 3, ahead: ['pico'] });
        expect(await q.turn('w_other', T0)).toEqual({ position: 1, ahead: [] });
        expect(await q.turn('w_none', T0)).toBeNull();
        expect(await q.line('pico', 'ag_2', T0)).toEqual({ waiting: 3, position: 2 });
        expect(await q.line('pico', 'ag_1', T0)).toEqual({ waiting: 3, position: 1 });
        expect(await q.line('uno', 'ag_2', T0)).toEqual({ waiting: 1, position: null });
        await q.leave('w_a');
        await q.leave('w_a');
        expect((await q.turn('w_b', T0))?.position).toBe(1);
        expect((await q.waiters('pico', T0)).map((w) => w.waiterId)).toEqual(['w_b', 'w_c']);
        expect(await q.waiters('pico', T0)).toEqual([waiter('w_b', { agentId: 'ag_2' }), waiter('w_c')]);
      }));

    it('keeps one line per pool: waiters for the pool and for one of its instances in one order, each turn naming what the waiters before it accept (decision 1030)', () =>
      withStore(async (store) => {
        const q = store.sessionQueue;
        const instance = (waiterId: string, name: string, over: Partial<SessionWaiter> = {}) => waiter(waiterId, { queue: name, ...over });
        await q.enqueue(instance('w_i2', 'pico.2@w1'));
        await q.enqueue(waiter('w_pool', { agentId: 'ag_2' }));
        await q.enqueue(instance('w_i1', 'pico.1@w1', { agentId: 'ag_2' }));
        await q.enqueue(instance('w_i2b', 'pico.2@w1'));
        await q.enqueue(waiter('w_uno', { queue: 'uno', pool: 'uno' }));
        expect(await q.turn('w_i2', T0)).toEqual({ position: 1, ahead: [] });
        expect(await q.turn('w_pool', T0)).toEqual({ position: 2, ahead: ['pico.2@w1'] });
        expect(await q.turn('w_i1', T0)).toEqual({ position: 3, ahead: ['pico.2@w1', 'pico'] });
        expect(await q.turn('w_i2b', T0)).toEqual({ position: 4, ahead: ['pico.2@w1', 'pico', 'pico.1@w1'] });
        expect(await q.turn('w_uno', T0)).toEqual({ position: 1, ahead: [] });
        expect((await q.waiters('pico', T0)).map((w) => w.waiterId)).toEqual(['w_i2', 'w_pool', 'w_i1', 'w_i2b']);
        // The pool's line counts every waiter; the place is the agent's first waiter, for one instance when asked.
        expect(await q.line('pico', 'ag_2', T0)).toEqual({ waiting: 4, position: 2 });
        expect(await q.line('pico', 'ag_2', T0, 'pico.1@w1')).toEqual({ waiting: 4, position: 3 });
        expect(await q.line('pico', 'ag_1', T0, 'pico.1@w1')).toEqual({ waiting: 4, position: null });
        await q.leave('w_i2');
        expect(await q.turn('w_pool', T0)).toEqual({ position: 1, ahead: [] });
        // Ghosts before a waiter (their liveness ran out) are not in its way.
        await q.renew(waiter('w_i1', { queue: 'pico.1@w1', agentId: 'ag_2', aliveUntilMs: T0 + 2 * ALIVE_MS }));
        expect(await q.turn('w_i1', T0 + ALIVE_MS)).toEqual({ position: 1, ahead: [] });
      }));

    it('never counts a waiter whose liveness ran out (a dead replica’s ghost); a renewed one keeps its place', () =>
      withStore(async (store) => {
        const q = store.sessionQueue;
        await q.enqueue(waiter('w_ghost'));
        await q.enqueue(waiter('w_live'));
        await q.renew(waiter('w_live', { aliveUntilMs: T0 + 3 * ALIVE_MS }));
        expect((await q.turn('w_live', T0 + ALIVE_MS - 1))?.position).toBe(2);
        // The ghost's deadline passed: the live waiter is next, though the ghost's row is still there.
        expect(await q.turn('w_live', T0 + ALIVE_MS)).toEqual({ position: 1, ahead: [] });
        expect(await q.line('pico', 'ag_1', T0 + ALIVE_MS)).toEqual({ waiting: 1, position: 1 });
        // The next writer removes it; a waiter renewed after it was removed joins again at the back.
        await q.enqueue(waiter('w_late', { enqueuedAtMs: T0 + ALIVE_MS, aliveUntilMs: T0 + 4 * ALIVE_MS }));
        expect(await q.turn('w_ghost', T0)).toBeNull();
        const back = await q.renew(waiter('w_ghost', { aliveUntilMs: T0 + 4 * ALIVE_MS }));
        expect(back).toBeGreaterThan(0);
        expect((await q.waiters('pico', T0 + ALIVE_MS)).map((w) => w.waiterId)).toEqual(['w_live', 'w_late', 'w_ghost']);
      }));

    it('reports a waiter leaving and a lease freed, whichever way it was freed', () =>
      withStore(async (store) => {
        const q = store.sessionQueue;
        await q.enqueue(waiter('w_a'));
        const left = await nextChange(store, 'pico', 'the waiter w_a left');
        await q.leave('w_a');
        await left.seen;
        const opened = await store.openSession(sessionRecord({ sessionId: 'ses_q', expiresAtMs: T0 + 90_000 }), { instances: ['pico.1@w1'] });
        expect(opened.kind).toBe('opened');
        const freedInstance = await nextChange(store, 'pico.1@w1', 'the lease on pico.1@w1 freed by ending its session');
        const freedPool = await nextChange(store, 'pico', 'the lease on pico.1@w1 freed by ending its session');
        await store.endSession('ses_q', T0 + 1);
        await Promise.all([freedInstance.seen, freedPool.seen]);
        // An expiry sweep frees it too.
        await store.openSession(sessionRecord({ sessionId: 'ses_r', createdAtMs: T0 + 2, expiresAtMs: T0 + 10 }), { instances: ['pico.1@w1'] });
        const expired = await nextChange(store, 'pico', 'the lease freed by the expiry sweep');
        expect(await store.expireSessions(T0 + 10)).toHaveLength(1);
        await expired.seen;
      }));

    it('reports a job in a session that ends, which frees no lease, by the job (decision 0801)', () =>
      withStore(async (store) => {
        await store.openSession(sessionRecord({ expiresAtMs: T0 + 90_000 }));
        await store.createJob(jobRecord({ jobId: 'job_s', sessionId: 'ses_1' }), { maxQueuedPerBoard: 8, nowMs: T0 });
        await claimBy(store, T0 + 1);
        await store.markJobRunning('job_s', 'w1', T0 + 2);
        const ended = await nextChange(store, sessionJobEndedId('job_s'), 'the end of job_s in session ses_1');
        await store.finishJob('job_s', done(T0 + 3), { workerId: 'w1' });
        await ended.seen;
        // A job failed by a sweep is told too.
        await store.createJob(jobRecord({ jobId: 'job_t', sessionId: 'ses_1', createdAtMs: T0 + 4 }), { maxQueuedPerBoard: 8, nowMs: T0 + 4 });
        await claimBy(store, T0 + 5, ['pico'], 'remote', 1_000);
        const swept = await nextChange(store, sessionJobEndedId('job_t'), 'the sweep failing job_t in session ses_1');
        expect(await store.failLapsedClaims(T0 + 10_000)).toHaveLength(1);
        await swept.seen;
      }));
  });
}
