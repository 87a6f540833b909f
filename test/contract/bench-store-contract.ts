import { describe, expect, it } from 'vitest';
import type { BenchStore, JobRecord, SessionRecord, UartRecord } from '../../server/storage/bench/bench-store.js';
import { type BoardHealthRecord, healthyBoardRecord } from '../../server/storage/bench/board-health-store.js';
import { describeJobQueueContract } from './bench-job-queue-contract.js';
import { describeHealthCountContract } from './bench-store-health-count-contract.js';
import { describePoolContract } from './bench-pool-contract.js';
import { describeSessionQueueContract } from './bench-session-queue-contract.js';
import { describeLeaseModel } from './bench-lease-model.js';
import { describeWorkerRequestsContract } from './bench-worker-requests-contract.js';
import { describeWorkersContract } from './bench-workers-contract.js';

/**
 * The bench store contract: one suite, run against every `BenchStore` implementation (SQLite
 * today; PostgreSQL next). A store file under test/contract/ calls `describeBenchStoreContract`
 * with a factory of fresh, empty stores. Everything the service relies on is here: agents,
 * exclusive leases and their expiry (a sweep; reads never write), jobs and their states, one job
 * per board, board health, the waitlist, secrets, and the lease model run through the service.
 */
export type BenchStoreFactory = () => BenchStore | Promise<BenchStore>;

/** The fixed start time of every record below (host milliseconds). */
export const T0 = 1_700_000_000_000;

export const sessionRecord = (over: Partial<SessionRecord> = {}): SessionRecord => ({
  sessionId: 'ses_1',
  agentId: 'ag_1',
  board: 'pico',
  state: 'active',
  idleSeconds: 90,
  createdAtMs: T0,
  expiresAtMs: T0 + 90_000,
  endedAtMs: null,
  lastHeartbeatAtMs: null,
  ...over,
});

export const jobRecord = (over: Partial<JobRecord> = {}): JobRecord => ({
  jobId: 'job_1',
  agentId: 'ag_1',
  board: 'pico',
  sessionId: null,
  state: 'queued',
  firmware: { sha256: 'a'.repeat(64), sizeBytes: 10, elf: { machine: 40, machineName: 'ARM (40)', entry: 9, segments: [] } },
  uartSeconds: 0.5,
  uart: null,
  stop: null,
  failure: null,
  createdAtMs: T0,
  startedAtMs: null,
  runningAtMs: null,
  finishedAtMs: null,
  flashMs: null,
  runMs: null,
  workerId: null,
  cancelReason: null,
  ...over,
});

/** A one-chunk capture of `text`, as the service stores it. */
export const uartOf = (text: string): UartRecord => {
  const bytes = new TextEncoder().encode(text);
  return { bytes, droppedBytes: 0, timeBase: 'wall', chunks: [{ atNanos: 0, offset: 0, length: bytes.length }], chunksOmitted: 0 };
};

/** Worker `w1` (in-process: no claim expiry) claims the next job on `boards`. */
export const claimBy = (store: BenchStore, nowMs: number, boards: readonly string[] = ['pico'], workerId = 'w1', claimMs: number | null = null) =>
  store.claimJob({ workerId, boards, nowMs, claimMs });

export const done = (nowMs: number) =>
  ({ state: 'done', nowMs, uart: uartOf('ok'), stop: { reason: 'elapsed', elapsedNanos: 1 }, flashMs: 1, runMs: 1 }) as const;
const queueOf = (nowMs: number, maxQueuedPerBoard = 8) => ({ maxQueuedPerBoard, nowMs });

export function describeBenchStoreContract(name: string, makeStore: BenchStoreFactory, options: { leaseModelRuns?: number } = {}): void {
  /** A fresh store with agents ag_1 ("one") and ag_2 ("two"); closed after `body`. */
  async function withStore(body: (store: BenchStore) => Promise<void>): Promise<void> {
    const store = await makeStore();
    try {
      await store.insertAgent({ agentId: 'ag_1', label: 'one', tokenSha256: '1'.repeat(64), createdAtMs: T0 });
      await store.insertAgent({ agentId: 'ag_2', label: 'two', tokenSha256: '2'.repeat(64), createdAtMs: T0 });
      await body(store);
    } finally {
      await store.close();
    }
  }

  /** ses_1 (idle 10 s) on pico with job_run running and job_wait queued. */
  async function sessionWithJobs(store: BenchStore): Promise<void> {
    expect((await store.openSession(sessionRecord({ idleSeconds: 10, expiresAtMs: T0 + 10_000 }))).kind).toBe('opened');
    await store.createJob(jobRecord({ jobId: 'job_run', sessionId: 'ses_1' }), queueOf(T0));
    await store.createJob(jobRecord({ jobId: 'job_wait', sessionId: 'ses_1', createdAtMs: T0 + 1 }), queueOf(T0));
    expect((await claimBy(store, T0 + 2))!.jobId).toBe('job_run');
    expect(await store.markJobRunning('job_run', 'w1', T0 + 3)).toEqual({ kind: 'held', cancelReason: null, inputSent: false });
  }

  describe(`bench store contract: ${name}`, () => {
    it('answers ping and finds agents by id and by token hash, never two with one token', () =>
      withStore(async (store) => {
        await store.ping();
        expect(await store.getAgent('ag_1')).toEqual({ agentId: 'ag_1', label: 'one', tokenSha256: '1'.repeat(64), createdAtMs: T0 });
        expect(await store.findAgentByTokenSha256('2'.repeat(64))).toMatchObject({ agentId: 'ag_2' });
        expect(await store.getAgent('ag_x')).toBeUndefined();
        expect(await store.findAgentByTokenSha256('3'.repeat(64))).toBeUndefined();
        await expect(store.insertAgent({ agentId: 'ag_3', label: 'three', tokenSha256: '1'.repeat(64), createdAtMs: T0 })).rejects.toThrow();
      }));

    it('gives one lease per board and reports the holder to the loser; other boards are independent', () =>
      withStore(async (store) => {
        expect(await store.openSession(sessionRecord())).toEqual({ kind: 'opened', session: sessionRecord() });
        expect(await store.openSession(sessionRecord({ sessionId: 'ses_2', agentId: 'ag_2' }))).toEqual({
          kind: 'board-leased',
          lease: { board: 'pico', holder: { kind: 'session', sessionId: 'ses_1' }, agentId: 'ag_1', agentLabel: 'one', expiresAtMs: T0 + 90_000 },
        });
        expect((await store.openSession(sessionRecord({ sessionId: 'ses_3', agentId: 'ag_2', board: 'uno' }))).kind).toBe('opened');
        const races = await Promise.all([4, 5, 6].map((n) => store.openSession(sessionRecord({ sessionId: `ses_${n}`, board: 'nano' }))));
        expect(races.filter((r) => r.kind === 'opened')).toHaveLength(1);
        expect((await store.listLeases(T0)).map((l) => l.board)).toEqual(['nano', 'pico', 'uno']);
        expect((await store.listActiveSessions(T0)).map((s) => [s.sessionId, s.agentLabel])).toContainEqual(['ses_3', 'two']);
      }));

    it('heartbeats and ends only active sessions, and an end frees the board', () =>
      withStore(async (store) => {
        await store.openSession(sessionRecord());
        expect(await store.heartbeatSession('ses_1', T0 + 1_000)).toEqual({
          kind: 'changed',
          session: sessionRecord({ expiresAtMs: T0 + 91_000, lastHeartbeatAtMs: T0 + 1_000 }),
        });
        expect(await store.heartbeatSession('ses_x', T0)).toEqual({ kind: 'not-found' });
        expect(await store.endSession('ses_1', T0 + 2_000)).toMatchObject({ kind: 'changed', session: { state: 'ended', endedAtMs: T0 + 2_000 } });
        expect(await store.heartbeatSession('ses_1', T0 + 3_000)).toMatchObject({ kind: 'not-active', session: { state: 'ended' } });
        expect(await store.endSession('ses_1', T0 + 3_000)).toMatchObject({ kind: 'not-active' });
        expect(await store.listLeases(T0 + 3_000)).toEqual([]);
        expect((await store.openSession(sessionRecord({ sessionId: 'ses_2', agentId: 'ag_2', createdAtMs: T0 + 3_000 }))).kind).toBe('opened');
      }));

    it('never writes on a read: a due session reads as expired, but only the sweep records it', () =>
      withStore(async (store) => {
        await store.openSession(sessionRecord());
        const due = T0 + 90_000;
        expect(await store.getSession('ses_1', due)).toMatchObject({ state: 'expired', endedAtMs: due });
        expect(await store.listActiveSessions(due)).toEqual([]);
        expect(await store.listLeases(due)).toEqual([]);
        expect((await store.counts(due)).sessionsOpen).toBe(0);
        // Nothing was written: as of a moment earlier the session is still active and leased.
        expect(await store.getSession('ses_1', due - 1)).toMatchObject({ state: 'active' });
        expect(await store.listLeases(due - 1)).toHaveLength(1);
        expect((await store.counts()).sessionsOpen).toBe(1);

        const sweeps = await Promise.all([store.expireSessions(due), store.expireSessions(due + 5)]);
        expect(sweeps.flat().map((s) => [s.sessionId, s.state, s.endedAtMs])).toEqual([['ses_1', 'expired', due]]);
        expect(await store.expireSessions(due + 10)).toEqual([]);
        expect(await store.getSession('ses_1', due - 1)).toMatchObject({ state: 'expired', endedAtMs: due });
        expect(await store.listLeases(due - 1)).toEqual([]);
      }));

    it('lets a write that needs the board expire a due lease itself', () =>
      withStore(async (store) => {
        await store.openSession(sessionRecord());
        const opened = await store.openSession(sessionRecord({ sessionId: 'ses_2', agentId: 'ag_2', createdAtMs: T0 + 90_000, expiresAtMs: T0 + 180_000 }));
        expect(opened.kind).toBe('opened');
        expect(await store.getSession('ses_1', T0)).toMatchObject({ state: 'expired', endedAtMs: T0 + 90_000 });
        expect(await store.heartbeatSession('ses_2', T0 + 180_000)).toMatchObject({ kind: 'not-active', session: { state: 'expired' } });
      }));

    it('keeps a session with an unfinished job alive; its idle time restarts when the last job finishes', () =>
      withStore(async (store) => {
        await sessionWithJobs(store);
        expect(await store.expireSessions(T0 + 60_000)).toEqual([]);
        expect(await store.getSession('ses_1', T0 + 60_000)).toMatchObject({ state: 'active', expiresAtMs: T0 + 70_000 });
        expect(await store.listLeases(T0 + 60_000)).toMatchObject([{ holder: { kind: 'session', sessionId: 'ses_1' }, expiresAtMs: T0 + 70_000 }]);
        await store.finishJob('job_run', done(T0 + 61_000));
        expect(await store.expireSessions(T0 + 80_000)).toEqual([]);
        expect((await claimBy(store, T0 + 80_000))!.jobId).toBe('job_wait');
        await store.finishJob('job_wait', { state: 'failed', nowMs: T0 + 81_000, failure: { kind: 'flash-failed', message: 'nope' } });
        expect(await store.getSession('ses_1', T0 + 90_999)).toMatchObject({ state: 'active', expiresAtMs: T0 + 91_000 });
        expect((await store.expireSessions(T0 + 91_000)).map((s) => s.sessionId)).toEqual(['ses_1']);
      }));

    it('on closing a session cancels its queued jobs and hands the lease to its running job until it finishes', () =>
      withStore(async (store) => {
        await sessionWithJobs(store);
        await store.endSession('ses_1', T0 + 5_000);
        expect(await store.getJob('job_wait')).toMatchObject({ state: 'failed', finishedAtMs: T0 + 5_000, failure: { kind: 'cancelled' } });
        expect(await store.getJob('job_run')).toMatchObject({ state: 'running', cancelReason: expect.stringMatching(/^session ses_1 ended at /) });
        expect(await store.renewJobClaim('job_run', 'w1', { nowMs: T0 + 5_000, claimMs: null })).toMatchObject({
          kind: 'held',
          cancelReason: expect.stringMatching(/^session ses_1 ended/),
        });
        const blocked = await store.openSession(sessionRecord({ sessionId: 'ses_2', agentId: 'ag_2', createdAtMs: T0 + 5_000, expiresAtMs: T0 + 95_000 }));
        expect(blocked).toMatchObject({ kind: 'board-leased', lease: { holder: { kind: 'job', jobId: 'job_run' }, expiresAtMs: null } });
        await store.finishJob('job_run', { state: 'failed', nowMs: T0 + 5_001, failure: { kind: 'cancelled', message: 'stopped' } });
        // The first outcome stands, and a cancelled job never starts.
        await store.finishJob('job_wait', { state: 'failed', nowMs: T0 + 5_002, failure: { kind: 'cancelled', message: 'late' } });
        expect((await store.getJob('job_wait'))!.failure!.message).toMatch(/^cancelled before it started/);
        expect(await claimBy(store, T0 + 5_003)).toBeUndefined();
        expect((await store.getJob('job_wait'))!.state).toBe('failed');
        expect((await store.openSession(sessionRecord({ sessionId: 'ses_3', agentId: 'ag_2', createdAtMs: T0 + 5_004 }))).kind).toBe('opened');
      }));

    it('creates a job only under its own active session on its board, or on a free board, within the queue limit', () =>
      withStore(async (store) => {
        await store.openSession(sessionRecord());
        await store.openSession(sessionRecord({ sessionId: 'ses_uno', board: 'uno' }));
        await store.endSession('ses_uno', T0);
        const submit = (over: Partial<JobRecord>, max = 8) => store.createJob(jobRecord(over), queueOf(T0, max));
        expect(await submit({ sessionId: 'ses_1', agentId: 'ag_2' })).toEqual({ kind: 'session-not-found' });
        expect(await submit({ sessionId: 'ses_x' })).toEqual({ kind: 'session-not-found' });
        expect(await submit({ sessionId: 'ses_uno', board: 'uno' })).toMatchObject({ kind: 'session-not-active' });
        expect(await submit({ sessionId: 'ses_1', board: 'uno' })).toMatchObject({ kind: 'session-other-board' });
        expect(await submit({ agentId: 'ag_2' })).toMatchObject({ kind: 'board-leased', lease: { holder: { kind: 'session', sessionId: 'ses_1' } } });
        expect(await submit({ jobId: 'job_a', sessionId: 'ses_1' }, 1)).toMatchObject({ kind: 'created', job: { state: 'queued' } });
        expect(await submit({ jobId: 'job_b', sessionId: 'ses_1' }, 1)).toEqual({ kind: 'queue-full', queued: 1 });
        expect(await submit({ jobId: 'job_own', board: 'uno', agentId: 'ag_2' })).toMatchObject({ kind: 'created' });
        expect(await store.openSession(sessionRecord({ sessionId: 'ses_2', board: 'uno' }))).toMatchObject({
          kind: 'board-leased',
          lease: { holder: { kind: 'job', jobId: 'job_own' }, agentLabel: 'two', expiresAtMs: null },
        });
        expect(await store.boardActivity()).toEqual(new Map([['pico', { queued: 1, active: 0 }], ['uno', { queued: 1, active: 0 }]]));
      }));

    it('moves a job queued → flashing (claimed) → running → done, in that order only, and frees its own lease', () =>
      withStore(async (store) => {
        await store.createJob(jobRecord(), queueOf(T0));
        expect(await store.markJobRunning('job_1', 'w1', T0 + 1)).toEqual({ kind: 'lost', state: 'queued' });
        expect(await claimBy(store, T0 + 1)).toMatchObject({ jobId: 'job_1', state: 'flashing', startedAtMs: T0 + 1, workerId: 'w1' });
        expect(await claimBy(store, T0 + 2)).toBeUndefined();
        expect(await store.markJobRunning('job_1', 'w2', T0 + 2)).toEqual({ kind: 'lost', state: 'flashing' });
        expect(await store.markJobRunning('job_1', 'w1', T0 + 2)).toEqual({ kind: 'held', cancelReason: null, inputSent: false });
        expect(await store.boardActivity()).toEqual(new Map([['pico', { queued: 0, active: 1 }]]));
        const { job: finished, ended, boardQueued } = await store.finishJob('job_1', done(T0 + 3), { workerId: 'w1' });
        expect(ended).toBe(true);
        expect(boardQueued, 'nothing else waits on pico').toBe(false);
        expect(finished).toMatchObject({ state: 'done', startedAtMs: T0 + 1, runningAtMs: T0 + 2, finishedAtMs: T0 + 3, stop: { reason: 'elapsed' } });
        expect(new TextDecoder().decode(finished.uart!.bytes)).toBe('ok');
        expect(await store.listLeases(T0 + 3)).toEqual([]);
        expect(await store.finishJob('job_1', { state: 'failed', nowMs: T0 + 4, failure: { kind: 'internal', message: 'late' } })).toMatchObject({ job: { state: 'done' }, ended: false });
        // The same worker's outcome sent again (its first answer lost) ends nothing: it is not counted twice.
        expect(await store.finishJob('job_1', done(T0 + 4), { workerId: 'w1' })).toMatchObject({ job: { state: 'done', finishedAtMs: T0 + 3 }, ended: false });
        expect(await store.markJobRunning('job_1', 'w1', T0 + 5)).toEqual({ kind: 'lost', state: 'done' });
      }));

    it('runs one job per board: the next job of a board is not claimed while one is flashing or running', () =>
      withStore(async (store) => {
        await sessionWithJobs(store);
        expect(await claimBy(store, T0 + 4, ['pico'], 'w2')).toBeUndefined();
        expect((await store.getJob('job_wait'))!.state).toBe('queued');
        // The end says the board has another job waiting: its worker's next claim looks at once (decision 0980).
        expect(await store.finishJob('job_run', done(T0 + 5), { workerId: 'w1' })).toMatchObject({ ended: true, boardQueued: true });
        expect(await claimBy(store, T0 + 6, ['pico'], 'w2')).toMatchObject({ jobId: 'job_wait', state: 'flashing', workerId: 'w2' });
      }));

    it("says at a job's end that its board has a task waiting when a health check is requested on the board or one of its instances (a claim hands out either, decision 0980)", () =>
      withStore(async (store) => {
        const claimOne = async (jobId: string, board: string, at: number) => {
          await store.createJob(jobRecord({ jobId, board, createdAtMs: at }), queueOf(at));
          expect(await claimBy(store, at, [board])).toMatchObject({ jobId });
        };
        const end = async (jobId: string, at: number) => (await store.finishJob(jobId, done(at), { workerId: 'w1' })).boardQueued;
        // Requested on another board only (its name starting as pico's does): nothing waits on pico.
        await store.healthChecks.request({ checkId: 'hc_other', board: 'pico-2', workerId: 'w1', timeoutMs: 1_000, nowMs: T0 });
        await claimOne('job_1', 'pico', T0);
        expect(await end('job_1', T0 + 1)).toBe(false);
        // Requested on the board while its job ran.
        await claimOne('job_2', 'pico', T0 + 2);
        await store.healthChecks.request({ checkId: 'hc_board', board: 'pico', workerId: 'w1', timeoutMs: 1_000, nowMs: T0 + 2 });
        expect(await end('job_2', T0 + 3)).toBe(true);
        // Requested on an instance of a pool of the board (decision 0510).
        await claimOne('job_3', 'uno', T0 + 4);
        await store.healthChecks.request({ checkId: 'hc_instance', board: 'uno.2@w1', workerId: 'w1', timeoutMs: 1_000, nowMs: T0 + 4 });
        expect(await end('job_3', T0 + 5)).toBe(true);
      }));

    it('saves the UART of a job only while its worker holds it: a finished outcome is never overwritten', () =>
      withStore(async (store) => {
        await store.createJob(jobRecord(), queueOf(T0));
        expect(await store.renewJobClaim('job_1', 'w1', { nowMs: T0, claimMs: null, uart: uartOf('too early') })).toMatchObject({ kind: 'lost' });
        expect((await store.getJob('job_1'))!.uart).toBeNull();
        await claimBy(store, T0 + 1);
        await store.markJobRunning('job_1', 'w1', T0 + 2);
        await store.renewJobClaim('job_1', 'w1', { nowMs: T0 + 2, claimMs: null, uart: uartOf('partial') });
        expect((await store.getJob('job_1'))!.uart).toMatchObject({ droppedBytes: 0, timeBase: 'wall', chunks: [{ atNanos: 0, offset: 0, length: 7 }] });
        await store.renewJobClaim('job_1', 'w2', { nowMs: T0 + 2, claimMs: null, uart: uartOf('not yours') });
        expect(new TextDecoder().decode((await store.getJob('job_1'))!.uart!.bytes)).toBe('partial');
        await store.finishJob('job_1', { state: 'failed', nowMs: T0 + 3, failure: { kind: 'cancelled', message: 'stopped' }, uart: uartOf('partial+') });
        await store.renewJobClaim('job_1', 'w1', { nowMs: T0 + 4, claimMs: null, uart: uartOf('late') });
        expect(new TextDecoder().decode((await store.getJob('job_1'))!.uart!.bytes)).toBe('partial+');
      }));

    it('after a restart of the worker: its running jobs fail as interrupted with their UART, queued ones stay queued', () =>
      withStore(async (store) => {
        await sessionWithJobs(store);
        await store.openSession(sessionRecord({ sessionId: 'ses_idle', board: 'uno' }));
        await store.renewJobClaim('job_run', 'w1', { nowMs: T0 + 4, claimMs: null, uart: uartOf('tick 1\r\n') });
        const interrupted = await store.releaseWorkerJobs('w1', { reason: 'the bench service restarted', nowMs: T0 + 100_000 });
        expect(interrupted).toMatchObject([{ jobId: 'job_run', state: 'failed', failure: { kind: 'interrupted' }, finishedAtMs: T0 + 100_000 }]);
        expect(interrupted[0]!.failure!.message).toBe('the bench service restarted while this job was running; submit it again');
        expect(new TextDecoder().decode(interrupted[0]!.uart!.bytes)).toBe('tick 1\r\n');
        expect((await store.getJob('job_wait'))!.state).toBe('queued');
        expect((await store.expireSessions(T0 + 100_000)).map((s) => s.sessionId)).toEqual(['ses_idle']);
        expect(await store.getSession('ses_1', T0 + 100_000)).toMatchObject({ state: 'active', expiresAtMs: T0 + 110_000 });
      }));

    it('counts and lists recent jobs and failures, newest first, with the agent label', () =>
      withStore(async (store) => {
        await store.createJob(jobRecord({ jobId: 'job_a' }), queueOf(T0));
        await store.finishJob('job_a', { state: 'failed', nowMs: T0 + 1, failure: { kind: 'flash-failed', message: 'x' } });
        await store.createJob(jobRecord({ jobId: 'job_b', agentId: 'ag_2', createdAtMs: T0 + 2 }), queueOf(T0 + 2));
        expect(await store.counts(T0 + 2)).toEqual({
          agents: 2,
          sessionsOpen: 0,
          jobsTotal: 2,
          jobsByState: { queued: 1, flashing: 0, running: 0, done: 0, failed: 1 },
        });
        expect((await store.recentJobs(10)).map((j) => [j.jobId, j.agentLabel])).toEqual([['job_b', 'two'], ['job_a', 'one']]);
        expect((await store.recentJobs(1)).map((j) => j.jobId)).toEqual(['job_b']);
        expect((await store.recentFailures(10)).map((j) => j.jobId)).toEqual(['job_a']);
      }));

    it('creates a secret once and keeps it', () =>
      withStore(async (store) => {
        const first = await store.secret('k', () => new Uint8Array([1, 2, 3]));
        expect(await store.secret('k', () => new Uint8Array([9]))).toEqual(first);
        expect(first).toEqual(new Uint8Array([1, 2, 3]));
      }));

    it('keeps board health per board, healthy when never seen', () =>
      withStore(async (store) => {
        expect(await store.boardHealth.get('pico')).toEqual({ consecutiveFailures: 0, lastFailure: undefined, quarantine: undefined });
        const sick = { consecutiveFailures: 3, lastFailure: 'Error: open failed', quarantine: { sinceMs: T0, reason: 'quarantined' } };
        await store.boardHealth.put('pico', sick);
        expect(await store.boardHealth.get('pico')).toEqual(sick);
        expect((await store.boardHealth.get('uno')).consecutiveFailures).toBe(0);
        await expect(store.boardHealth.put('pico', { ...sick, consecutiveFailures: -1 })).rejects.toThrow(RangeError);
      }));

    it('changes board health in one step: concurrent failures lose no count, a release between two failures is not undone', () =>
      withStore(async (store) => {
        // The rule InstanceHealth applies, simplified: one more failure, quarantined at the third.
        const fail = (now: BoardHealthRecord): BoardHealthRecord => {
          const consecutiveFailures = now.consecutiveFailures + 1;
          return { consecutiveFailures, lastFailure: 'flash', quarantine: now.quarantine ?? (consecutiveFailures >= 3 ? { sinceMs: T0, reason: 'quarantined' } : undefined) };
        };
        // A change that leaves a board never seen as it is.
        expect(await store.boardHealth.update('never', () => undefined)).toEqual({ before: healthyBoardRecord, after: healthyBoardRecord });
        // Eight failures at once (overlapping transactions on PostgreSQL's pool): every one counted, one quarantine.
        const results = await Promise.all(Array.from({ length: 8 }, () => store.boardHealth.update('pico.2@w', fail)));
        expect((await store.boardHealth.get('pico.2@w')).consecutiveFailures).toBe(8);
        expect(results.filter(({ before, after }) => !before.quarantine && after.quarantine)).toHaveLength(1);
        await expect(store.boardHealth.update('pico.2@w', (now) => ({ ...now, consecutiveFailures: -1 }))).rejects.toThrow(RangeError);
        expect((await store.boardHealth.get('pico.2@w')).consecutiveFailures).toBe(8);
        // Two failures, then a third and a release at once: either order leaves the board in service.
        await store.boardHealth.update('pico.3@w', fail);
        await store.boardHealth.update('pico.3@w', fail);
        await Promise.all([store.boardHealth.update('pico.3@w', fail), store.boardHealth.put('pico.3@w', healthyBoardRecord)]);
        const released = await store.boardHealth.get('pico.3@w');
        expect(released.quarantine).toBeUndefined();
        expect(released.consecutiveFailures).toBeLessThanOrEqual(1);
        // After the release, failures count from zero again.
        expect((await store.boardHealth.update('pico.3@w', fail)).after.quarantine).toBeUndefined();
      }));

    it('keeps the waitlist: first join of an address wins, newest first', () =>
      withStore(async (store) => {
        expect(await store.waitlist.add({ email: 'a@example.org', kind: 'person', note: '', joinedAtMs: T0 })).toEqual({ created: true });
        expect(await store.waitlist.add({ email: 'a@example.org', kind: 'team', note: 'again', joinedAtMs: T0 + 1 })).toEqual({ created: false });
        await store.waitlist.add({ email: 'b@example.org', kind: 'agent', note: 'n', joinedAtMs: T0 + 2 });
        expect(await store.waitlist.count()).toBe(2);
        expect((await store.waitlist.list({ limit: 5 })).map((e) => [e.email, e.kind])).toEqual([['b@example.org', 'agent'], ['a@example.org', 'person']]);
      }));
  });

  describeJobQueueContract(name, withStore);
  describeWorkersContract(name, withStore);
  describeWorkerRequestsContract(name, withStore);
  describePoolContract(name, withStore);
  describeHealthCountContract(name, withStore);
  describeSessionQueueContract(name, withStore);
  describeLeaseModel(name, makeStore, options.leaseModelRuns === undefined ? {} : { numRuns: options.leaseModelRuns });
}
