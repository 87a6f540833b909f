import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { JobRecord } from '../server/storage/bench/bench-store.js';
import { PostgresBenchStore } from '../server/storage/bench/postgres/postgres-bench-store.js';
import type { SqlBenchStore } from '../server/storage/bench/sql-bench-store.js';
import { SqliteBenchStore } from '../server/storage/bench/sqlite-bench-store.js';

/** What one job costs the store, counted (not timed): statements, and transactions among them. */
export interface StoreRoundTrips {
  statementsPerJob: number;
  transactionsPerJob: number;
}

const T0 = 1_700_000_000_000;
const job = (jobId: string, sessionId: string | null): JobRecord => ({
  jobId,
  agentId: 'ag_1',
  board: 'pico',
  sessionId,
  state: 'queued',
  firmware: { sha256: 'a'.repeat(64), sizeBytes: 10, elf: { machine: 40, machineName: 'ARM (40)', entry: 0, segments: [] } },
  uartSeconds: 0.1,
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
});

/**
 * The store calls of one job's life as the service makes them, on `store`: submitted (with its own
 * lease, or in a session), claimed by a worker, running, one renewal with its UART, done (the
 * gateway passing the session it knows from the claim), read once. Counts that noise cannot move, beside the timed ratios (decision 0545).
 */
async function jobOnStore(store: SqlBenchStore, options: { inSession: boolean }): Promise<StoreRoundTrips> {
  await store.insertAgent({ agentId: 'ag_1', label: 'perf', tokenSha256: '1'.repeat(64), createdAtMs: T0 });
  const sessionId = options.inSession ? 'ses_1' : null;
  if (sessionId !== null) {
    await store.openSession({ sessionId, agentId: 'ag_1', board: 'pico', state: 'active', idleSeconds: 90, createdAtMs: T0, expiresAtMs: T0 + 90_000, endedAtMs: null, lastHeartbeatAtMs: null });
  }
  const before = store.counters;
  await store.createJob(job('job_1', sessionId), { maxQueuedPerBoard: 8, nowMs: T0 });
  // As the gateway asks: the job, or else a health check waiting for the worker (decision 0860).
  await store.claimTask({ workerId: 'local', boards: ['pico'], checkBoards: ['pico'], nowMs: T0 + 1, claimMs: null });
  await store.markJobRunning('job_1', 'local', T0 + 2);
  const uart = { bytes: new TextEncoder().encode('hello\n'), droppedBytes: 0, timeBase: 'simulated' as const, chunks: [], chunksOmitted: 0 };
  await store.renewJobClaim('job_1', 'local', { nowMs: T0 + 3, claimMs: null, uart });
  await store.finishJob('job_1', { state: 'done', nowMs: T0 + 4, uart, stop: { reason: 'elapsed', elapsedNanos: 1e8 }, flashMs: 1, runMs: 2 }, { workerId: 'local', sessionId });
  await store.getJob('job_1');
  const after = store.counters;
  return { statementsPerJob: after.statements - before.statements, transactionsPerJob: after.transactions - before.transactions };
}

/** The counts on the embedded SQLite store and, given a database URL, on the PostgreSQL one. */
export async function storeRoundTrips(databaseUrl: string | undefined, options: { inSession: boolean }): Promise<{ sqlite: StoreRoundTrips; postgres?: StoreRoundTrips }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-perf-store-'));
  try {
    const sqliteStore = new SqliteBenchStore(path.join(dir, 'bench.sqlite'));
    const sqlite = await jobOnStore(sqliteStore, options).finally(() => sqliteStore.close());
    if (databaseUrl === undefined) return { sqlite };
    const pgStore = await PostgresBenchStore.open(databaseUrl, { poolSize: 2 });
    const postgres = await jobOnStore(pgStore, options).finally(() => pgStore.close());
    return { sqlite, postgres };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
