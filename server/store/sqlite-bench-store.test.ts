import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import type { JobRecord, SessionRecord, UartRecord } from './bench-store.js';
import { FirmwareBlobStore } from './firmware-blob-store.js';
import { SQLITE_SCHEMA_VERSION, SqliteBenchStore } from './sqlite-bench-store.js';

const made: string[] = [];
const dir = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'hilbench-store-'));
  made.push(d);
  return d;
};
afterAll(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});
const T0 = 1_700_000_000_000;

const session = (over: Partial<SessionRecord> = {}): SessionRecord => ({
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

const job = (over: Partial<JobRecord> = {}): JobRecord => ({
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
  ...over,
});

/** A one-chunk capture of `text`, as the service stores it. */
const uartOf = (text: string): UartRecord => {
  const bytes = new TextEncoder().encode(text);
  return { bytes, droppedBytes: 0, timeBase: 'wall', chunks: [{ atNanos: 0, offset: 0, length: bytes.length }], chunksOmitted: 0 };
};

async function storeWithAgents(file = ':memory:') {
  const store = new SqliteBenchStore(file);
  await store.insertAgent({ agentId: 'ag_1', label: 'one', tokenSha256: '1'.repeat(64), createdAtMs: T0 });
  await store.insertAgent({ agentId: 'ag_2', label: 'two', tokenSha256: '2'.repeat(64), createdAtMs: T0 });
  return store;
}

describe('SqliteBenchStore', () => {
  it('records the schema version and refuses a database from a newer hilbench', async () => {
    const file = path.join(dir(), 'bench.sqlite');
    const store = new SqliteBenchStore(file);
    expect(store.database.prepare('SELECT version FROM schema_version').get()).toEqual({ version: SQLITE_SCHEMA_VERSION });
    expect(store.database.pragma('journal_mode', { simple: true })).toBe('wal');
    await store.close();
    const db = new Database(file);
    db.prepare('UPDATE schema_version SET version = ?').run(SQLITE_SCHEMA_VERSION + 1);
    db.close();
    expect(() => new SqliteBenchStore(file)).toThrow(/newer than this hilbench understands/);
  });

  it('gives one lease per board: a second open on a leased board reports the holder', async () => {
    const store = await storeWithAgents();
    expect((await store.openSession(session())).kind).toBe('opened');
    const second = await store.openSession(session({ sessionId: 'ses_2', agentId: 'ag_2' }));
    expect(second).toEqual({
      kind: 'board-leased',
      lease: { board: 'pico', holder: { kind: 'session', sessionId: 'ses_1' }, agentId: 'ag_1', agentLabel: 'one', expiresAtMs: T0 + 90_000 },
    });
    // Once the first lease has run out, the same call wins (expiry is decided inside the transaction).
    expect((await store.openSession(session({ sessionId: 'ses_3', agentId: 'ag_2', createdAtMs: T0 + 90_000, expiresAtMs: T0 + 180_000 }))).kind).toBe('opened');
    expect((await store.getSession('ses_1', T0 + 90_000))!).toMatchObject({ state: 'expired', endedAtMs: T0 + 90_000 });
  });

  it('lets a job take the board for itself and frees it when the job finishes', async () => {
    const store = await storeWithAgents();
    expect((await store.createJob(job(), { maxQueuedPerBoard: 4, nowMs: T0 })).kind).toBe('created');
    const blocked = await store.openSession(session({ agentId: 'ag_2' }));
    expect(blocked).toMatchObject({ kind: 'board-leased', lease: { holder: { kind: 'job', jobId: 'job_1' }, expiresAtMs: null } });
    await store.markJobPhase('job_1', 'flashing', T0 + 1);
    await expect(store.markJobPhase('job_1', 'flashing', T0 + 2)).rejects.toThrow(/cannot move to flashing: it is not queued/);
    await store.finishJob('job_1', { state: 'failed', nowMs: T0 + 3, failure: { kind: 'flash-failed', message: 'nope' } });
    expect((await store.openSession(session({ agentId: 'ag_2' }))).kind).toBe('opened');
  });

  it('fails running jobs as interrupted, keeping the UART saved while they ran, and returns queued ones after a restart', async () => {
    const file = path.join(dir(), 'bench.sqlite');
    const store = await storeWithAgents(file);
    await store.openSession(session());
    await store.openSession(session({ sessionId: 'ses_idle', board: 'uno' }));
    await store.createJob(job({ jobId: 'job_a', sessionId: 'ses_1' }), { maxQueuedPerBoard: 4, nowMs: T0 });
    await store.createJob(job({ jobId: 'job_b', sessionId: 'ses_1', createdAtMs: T0 + 1 }), { maxQueuedPerBoard: 4, nowMs: T0 });
    await store.markJobPhase('job_a', 'flashing', T0 + 2);
    await store.markJobPhase('job_a', 'running', T0 + 3);
    await store.saveJobUart('job_a', uartOf('tick 1\r\n'));
    await store.close();

    const reopened = new SqliteBenchStore(file);
    const { requeued, interrupted, expired } = await reopened.recoverAfterRestart(T0 + 100_000);
    // ses_1's jobs kept it alive (decision 0211): its queued job runs again, and its idle time
    // starts at the restart that ended job_a. ses_idle, with no job, ran out while the server was down.
    expect(requeued.map((j) => j.jobId)).toEqual(['job_b']);
    expect(interrupted).toMatchObject([{ jobId: 'job_a', state: 'failed', failure: { kind: 'interrupted' }, finishedAtMs: T0 + 100_000 }]);
    expect(new TextDecoder().decode(interrupted[0]!.uart!.bytes)).toBe('tick 1\r\n');
    expect(expired.map((s) => s.sessionId)).toEqual(['ses_idle']);
    expect(await reopened.getSession('ses_1', T0 + 100_000)).toMatchObject({ state: 'active', expiresAtMs: T0 + 190_000 });
    await reopened.close();
  });

  it('saves the UART of a running job only while it runs: a finished outcome is never overwritten', async () => {
    const store = await storeWithAgents();
    await store.createJob(job(), { maxQueuedPerBoard: 4, nowMs: T0 });
    await store.saveJobUart('job_1', uartOf('too early'));
    expect((await store.getJob('job_1'))!.uart).toBeNull();
    await store.markJobPhase('job_1', 'flashing', T0 + 1);
    await store.markJobPhase('job_1', 'running', T0 + 2);
    await store.saveJobUart('job_1', uartOf('partial'));
    expect((await store.getJob('job_1'))!.uart).toMatchObject({ droppedBytes: 0, timeBase: 'wall', chunks: [{ atNanos: 0, offset: 0, length: 7 }] });
    await store.finishJob('job_1', { state: 'failed', nowMs: T0 + 3, failure: { kind: 'cancelled', message: 'stopped' }, uart: uartOf('partial+') });
    await store.saveJobUart('job_1', uartOf('late'));
    expect(new TextDecoder().decode((await store.getJob('job_1'))!.uart!.bytes)).toBe('partial+');
  });

  it('keeps a secret across reopenings', async () => {
    const file = path.join(dir(), 'bench.sqlite');
    const a = new SqliteBenchStore(file);
    const first = await a.secret('k', () => new Uint8Array([1, 2, 3]));
    await a.close();
    const b = new SqliteBenchStore(file);
    expect(await b.secret('k', () => new Uint8Array([9]))).toEqual(first);
    await b.close();
  });
});

describe('FirmwareBlobStore', () => {
  it('stores by hash through a temporary file and leaves no temporary behind', async () => {
    const d = dir();
    const blobs = new FirmwareBlobStore(d);
    const sha = 'b'.repeat(64);
    await blobs.put(sha, new Uint8Array([1, 2, 3]));
    await blobs.put(sha, new Uint8Array([1, 2, 3]));
    expect(readdirSync(d)).toEqual([sha]);
    expect(await blobs.get(sha)).toEqual(new Uint8Array([1, 2, 3]));
    expect(await blobs.get('c'.repeat(64))).toBeUndefined();
  });

  it('never lets a malformed hash name another path', async () => {
    const d = dir();
    writeFileSync(path.join(d, 'x'), 'x');
    const blobs = new FirmwareBlobStore(d);
    await expect(blobs.get('../x')).rejects.toThrow(/not a SHA-256 hex digest/);
  });
});

describe('SqliteBenchStore: closing a session with jobs (bench audit 1)', () => {
  async function sessionWithJobs() {
    const store = await storeWithAgents();
    expect((await store.openSession(session({ idleSeconds: 10, expiresAtMs: T0 + 10_000 }))).kind).toBe('opened');
    const opts = { maxQueuedPerBoard: 8, nowMs: T0 };
    await store.createJob(job({ jobId: 'job_run', sessionId: 'ses_1' }), opts);
    await store.createJob(job({ jobId: 'job_wait', sessionId: 'ses_1', createdAtMs: T0 + 1 }), opts);
    await store.markJobPhase('job_run', 'flashing', T0 + 2);
    await store.markJobPhase('job_run', 'running', T0 + 3);
    return store;
  }

  it('when ended: cancels its queued jobs and hands the lease to its running job until it finishes', async () => {
    const how = 'ended';
    const atMs = T0 + 5_000;
    const iso = '2023-11-14T22:13:25.000Z';
    const store = await sessionWithJobs();
    await store.endSession('ses_1', atMs);
    expect(await store.getJob('job_wait')).toMatchObject({
      state: 'failed',
      startedAtMs: null,
      finishedAtMs: atMs,
      failure: { kind: 'cancelled', message: `cancelled before it started: session ses_1 ${how} at ${iso}` },
    });
    expect((await store.getJob('job_run'))!.state).toBe('running');
    const blocked = await store.openSession(session({ sessionId: 'ses_2', agentId: 'ag_2', createdAtMs: atMs, expiresAtMs: atMs + 90_000 }));
    expect(blocked).toMatchObject({ kind: 'board-leased', lease: { holder: { kind: 'job', jobId: 'job_run' }, agentId: 'ag_1', expiresAtMs: null } });

    await store.finishJob('job_run', { state: 'failed', nowMs: atMs + 1, failure: { kind: 'cancelled', message: 'stopped' } });
    // The outcome recorded first stands: a late dispatcher rejection of the cancelled job changes nothing.
    await store.finishJob('job_wait', { state: 'failed', nowMs: atMs + 2, failure: { kind: 'cancelled', message: 'late' } });
    expect((await store.getJob('job_wait'))!.failure!.message).toMatch(/^cancelled before it started/);
    await expect(store.markJobPhase('job_wait', 'flashing', atMs + 3)).resolves.toBeUndefined();
    expect((await store.openSession(session({ sessionId: 'ses_3', agentId: 'ag_2', createdAtMs: atMs + 4, expiresAtMs: atMs + 90_000 }))).kind).toBe('opened');
  });

  it('never expires while one of its jobs is queued or running; its idle time restarts when the last one finishes', async () => {
    const store = await sessionWithJobs();
    // Idle 10 s, no heartbeat: long past expires_at, the running and the queued job keep it alive.
    expect(await store.expireSessions(T0 + 60_000)).toEqual([]);
    expect(await store.getSession('ses_1', T0 + 60_000)).toMatchObject({ state: 'active', expiresAtMs: T0 + 70_000 });
    expect(await store.listLeases(T0 + 60_000)).toMatchObject([{ holder: { kind: 'session', sessionId: 'ses_1' }, expiresAtMs: T0 + 70_000 }]);
    const blocked = await store.openSession(session({ sessionId: 'ses_2', agentId: 'ag_2', createdAtMs: T0 + 60_000, expiresAtMs: T0 + 150_000 }));
    expect(blocked).toMatchObject({ kind: 'board-leased', lease: { holder: { kind: 'session', sessionId: 'ses_1' }, expiresAtMs: T0 + 70_000 } });

    await store.finishJob('job_run', { state: 'done', nowMs: T0 + 61_000, uart: uartOf(''), stop: { reason: 'elapsed', elapsedNanos: 0 }, flashMs: 1, runMs: 1 });
    expect(await store.expireSessions(T0 + 80_000)).toEqual([]);
    await store.markJobPhase('job_wait', 'flashing', T0 + 80_000);
    await store.finishJob('job_wait', { state: 'failed', nowMs: T0 + 81_000, failure: { kind: 'flash-failed', message: 'nope' } });
    // The last job finished at +81 s: the session is idle from then, for its 10 s.
    expect(await store.getSession('ses_1', T0 + 90_999)).toMatchObject({ state: 'active', expiresAtMs: T0 + 91_000 });
    expect((await store.expireSessions(T0 + 91_000)).map((s) => s.sessionId)).toEqual(['ses_1']);
    expect((await store.openSession(session({ sessionId: 'ses_2', agentId: 'ag_2', createdAtMs: T0 + 91_000 }))).kind).toBe('opened');
  });

  it('frees the board at once when the closed session has nothing running', async () => {
    const store = await storeWithAgents();
    await store.openSession(session());
    await store.createJob(job({ sessionId: 'ses_1' }), { maxQueuedPerBoard: 8, nowMs: T0 });
    await store.endSession('ses_1', T0 + 1);
    expect((await store.getJob('job_1'))!.failure!.kind).toBe('cancelled');
    expect((await store.openSession(session({ sessionId: 'ses_2', agentId: 'ag_2', createdAtMs: T0 + 2 }))).kind).toBe('opened');
  });
});
