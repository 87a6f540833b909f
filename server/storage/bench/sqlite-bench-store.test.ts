import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { T0, jobRecord, sessionRecord, uartOf } from '../../../test/contract/bench-store-contract.js';
import { jobStates } from '../../../wire/job-states.js';
import { FirmwareBlobStore } from './firmware-blob-store.js';
import { runMigrations } from '../run-migrations.js';
import { benchStoreMigrations } from './bench-store-migrations.js';
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
// The records every store test uses are the contract suite's own.
const session = sessionRecord;
const job = jobRecord;

async function storeWithAgents(file = ':memory:') {
  const store = new SqliteBenchStore(file);
  await store.insertAgent({ agentId: 'ag_1', label: 'one', tokenSha256: '1'.repeat(64), createdAtMs: T0 });
  await store.insertAgent({ agentId: 'ag_2', label: 'two', tokenSha256: '2'.repeat(64), createdAtMs: T0 });
  return store;
}

/** What only SQLite has: the file, its schema version, reopening it. The rest: test/contract/bench-store-contract.ts. */
describe('SqliteBenchStore', () => {
  it('its CHECK on job states accepts exactly the one list of job states (wire/job-states.ts)', async () => {
    const store = await storeWithAgents();
    const insert = store.database.prepare(
      "INSERT INTO jobs (job_id, agent_id, board, state, firmware_sha256, firmware_size_bytes, elf_json, uart_seconds, created_at_ms) VALUES (?, 'ag_1', ?, ?, 'x', 1, '{}', 1, 0)",
    );
    // One board per job: two active jobs on a board are refused by another rule.
    jobStates.forEach((state, i) => expect(() => insert.run(`job_${i}`, `board_${i}`, state)).not.toThrow());
    expect(() => insert.run('job_bogus', 'board_x', 'paused')).toThrow(/CHECK constraint failed/);
    await store.close();
  });

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

  it('adopts a version-2 database whose board health and waitlist tables were made ad hoc, and keeps their rows', async () => {
    const file = path.join(dir(), 'bench.sqlite');
    const old = new Database(file);
    runMigrations(old, benchStoreMigrations.slice(0, 2));
    // As SqliteQuarantineStore and SqliteWaitlist created them on the store's handle before migration 3.
    old.exec(`CREATE TABLE IF NOT EXISTS board_health (board TEXT NOT NULL PRIMARY KEY, consecutive_failures INTEGER NOT NULL CHECK (consecutive_failures >= 0),
      last_failure TEXT, quarantined_since_ms INTEGER, quarantine_reason TEXT, CHECK ((quarantined_since_ms IS NULL) = (quarantine_reason IS NULL)))`);
    old.exec(`CREATE TABLE IF NOT EXISTS waitlist (email TEXT NOT NULL PRIMARY KEY, kind TEXT NOT NULL CHECK (kind IN ('person', 'team', 'agent')),
      note TEXT NOT NULL, joined_at_ms INTEGER NOT NULL)`);
    old.prepare("INSERT INTO waitlist VALUES ('a@example.org', 'team', '', 1)").run();
    old.prepare("INSERT INTO board_health VALUES ('pico', 2, 'boom', NULL, NULL)").run();
    old.close();
    const store = new SqliteBenchStore(file);
    expect(store.database.prepare('SELECT version FROM schema_version').get()).toEqual({ version: SQLITE_SCHEMA_VERSION });
    expect(await store.waitlist.count()).toBe(1);
    expect(await store.boardHealth.get('pico')).toMatchObject({ consecutiveFailures: 2, lastFailure: 'boom' });
    await store.close();
  });

  it('upgrading, keeps the oldest of two active jobs of a board and fails the other as interrupted', async () => {
    const file = path.join(dir(), 'bench.sqlite');
    const store = await storeWithAgents(file);
    await store.createJob(job({ jobId: 'job_a' }), { maxQueuedPerBoard: 4, nowMs: T0 });
    await store.claimJob({ workerId: 'local', boards: ['pico'], nowMs: T0 + 1, claimMs: null });
    // A database from before the rule (schema 3), where a second job of the board got going too.
    store.database.exec(`DROP INDEX jobs_one_active_per_instance; DROP INDEX jobs_queued_by_instance;
      ALTER TABLE jobs DROP COLUMN instance; ALTER TABLE sessions DROP COLUMN instance; DROP TABLE leases;
      CREATE TABLE leases (board TEXT PRIMARY KEY, holder_kind TEXT NOT NULL, holder_id TEXT NOT NULL, agent_id TEXT NOT NULL REFERENCES agents(agent_id));
      DROP INDEX jobs_queued_by_board; DROP INDEX jobs_by_claim;
      ALTER TABLE jobs DROP COLUMN worker_id; ALTER TABLE jobs DROP COLUMN claim_expires_at_ms; ALTER TABLE jobs DROP COLUMN cancel_reason;
      ALTER TABLE jobs DROP COLUMN serial_next_seq; ALTER TABLE jobs DROP COLUMN serial_acked_seq;
      DROP TABLE job_serial_input; DROP TABLE board_health_checks;
      DROP TABLE workers; DROP TABLE session_waiters; DROP TABLE debug_armings; DROP TABLE debug_jobs; UPDATE schema_version SET version = 3`);
    store.database.prepare("INSERT INTO jobs (job_id, agent_id, board, state, firmware_sha256, firmware_size_bytes, elf_json, uart_seconds, created_at_ms, started_at_ms) VALUES ('job_b', 'ag_1', 'pico', 'flashing', ?, 1, '{}', 1, ?, ?)").run('a'.repeat(64), T0 + 2, T0 + 3);
    await store.close();
    const upgraded = new SqliteBenchStore(file);
    expect((await upgraded.getJob('job_a'))!.state).toBe('flashing');
    expect(await upgraded.getJob('job_b')).toMatchObject({ state: 'failed', failure: { kind: 'interrupted' }, finishedAtMs: T0 + 3 });
    await upgraded.close();
  });

  it('after a restart, fails the local worker’s running jobs as interrupted, keeping the UART saved while they ran; queued ones stay', async () => {
    const file = path.join(dir(), 'bench.sqlite');
    const store = await storeWithAgents(file);
    await store.openSession(session());
    await store.openSession(session({ sessionId: 'ses_idle', board: 'uno' }));
    await store.createJob(job({ jobId: 'job_a', sessionId: 'ses_1' }), { maxQueuedPerBoard: 4, nowMs: T0 });
    await store.createJob(job({ jobId: 'job_b', sessionId: 'ses_1', createdAtMs: T0 + 1 }), { maxQueuedPerBoard: 4, nowMs: T0 });
    await store.claimJob({ workerId: 'local', boards: ['pico'], nowMs: T0 + 2, claimMs: null });
    await store.markJobRunning('job_a', 'local', T0 + 3);
    await store.renewJobClaim('job_a', 'local', { nowMs: T0 + 3, claimMs: null, uart: uartOf('tick 1\r\n') });
    await store.close();

    const reopened = new SqliteBenchStore(file);
    const interrupted = await reopened.releaseWorkerJobs('local', { reason: 'the bench service restarted', nowMs: T0 + 100_000 });
    const expired = await reopened.expireSessions(T0 + 100_000);
    // ses_1's jobs kept it alive (decision 0211): its queued job waits for the worker, and its idle
    // time starts at the restart that ended job_a. ses_idle, with no job, ran out while the server was down.
    expect((await reopened.getJob('job_b'))!.state).toBe('queued');
    expect(interrupted).toMatchObject([{ jobId: 'job_a', state: 'failed', failure: { kind: 'interrupted' }, finishedAtMs: T0 + 100_000 }]);
    expect(new TextDecoder().decode(interrupted[0]!.uart!.bytes)).toBe('tick 1\r\n');
    expect(expired.map((s) => s.sessionId)).toEqual(['ses_idle']);
    expect(await reopened.getSession('ses_1', T0 + 100_000)).toMatchObject({ state: 'active', expiresAtMs: T0 + 190_000 });
    await reopened.close();
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

  it('syncs the bytes before the rename and the rename through the folder before put resolves', async () => {
    const d = dir();
    const sha = 'e'.repeat(64);
    const seen: string[] = [];
    const blobs = new FirmwareBlobStore(d, {
      file: async (file) => {
        seen.push(`file ${path.basename(file) === sha ? 'under its name' : 'aside'}, ${readdirSync(d).includes(sha) ? 'renamed' : 'not renamed'}`);
      },
      dir: async (folder) => {
        seen.push(`dir ${folder === d ? 'of the blob' : folder}, ${readdirSync(d).includes(sha) ? 'renamed' : 'not renamed'}`);
      },
    });
    await blobs.put(sha, new Uint8Array([7]));
    expect(seen).toEqual(['file aside, not renamed', 'dir of the blob, renamed']);
    expect(readdirSync(d)).toEqual([sha]);
  });

  // Regression: a put that found the blob in place resolved at once, while the put that renamed it
  // (the same firmware uploaded twice at once) could still be syncing the folder: the second job's
  // row then named a name a power cut could take back.
  it('a put that finds the blob in place resolves only after a folder sync that began after it', async () => {
    const d = dir();
    const sha = 'f'.repeat(64);
    const folderSyncs: { release: () => void }[] = [];
    const blobs = new FirmwareBlobStore(d, {
      file: async () => {},
      dir: () => new Promise<void>((release) => folderSyncs.push({ release })),
    });
    const first = blobs.put(sha, new Uint8Array([7]));
    while (folderSyncs.length < 1) await new Promise((resolve) => setImmediate(resolve));
    // The rename is done, its folder sync still running: an identical upload arrives.
    let secondDone = false;
    const second = blobs.put(sha, new Uint8Array([7])).then(() => (secondDone = true));
    while (folderSyncs.length < 2 && !secondDone) await new Promise((resolve) => setImmediate(resolve));
    expect(secondDone).toBe(false);
    expect(folderSyncs).toHaveLength(2);
    for (const sync of folderSyncs) sync.release();
    await Promise.all([first, second]);
    expect(readdirSync(d)).toEqual([sha]);
    // Once seen synced, the same firmware again costs no folder sync.
    const third = blobs.put(sha, new Uint8Array([7]));
    await third;
    expect(folderSyncs).toHaveLength(2);
  });

  it('never lets a malformed hash name another path', async () => {
    const d = dir();
    writeFileSync(path.join(d, 'x'), 'x');
    const blobs = new FirmwareBlobStore(d);
    await expect(blobs.get('../x')).rejects.toThrow(/not a SHA-256 hex digest/);
  });
});
