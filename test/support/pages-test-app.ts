import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClock } from '@sinonjs/fake-timers';
import Database from 'better-sqlite3';
import express from 'express';
import { clockFromFakeTimers } from '../../core/clock.js';
import type { BenchSnapshot, BoardSnapshot } from '../../server/bench/views/bench-snapshot.js';
import { createPagesRouter } from '../../server/bench/pages/pages-router.js';
import { migrateBenchDatabase } from '../../server/storage/bench/bench-store-migrations.js';
import { SqlWaitlist } from '../../server/storage/bench/sql-side-stores.js';
import { SqliteExecutor } from '../../server/storage/bench/sql/sqlite-executor.js';

/**
 * Test support for the pages (imported by `*.test.ts` only): an express app holding just the pages
 * router, listening on loopback port 0, with a fake clock, a fake snapshot and a real SQLite file.
 */

export const TEST_START_MS = Date.UTC(2026, 10, 20, 12, 0, 0);
export const TEST_SECRET = new Uint8Array(32).map((_, i) => (i * 37 + 11) & 0xff);

/** A board for fake snapshots; override what the test is about. */
export function board(overrides: Partial<BoardSnapshot> & { id: string }): BoardSnapshot {
  return {
    name: `Board ${overrides.id}`,
    description: '',
    mcu: 'RP2040',
    architecture: 'arm',
    backend: 'mock',
    status: 'free',
    offlineReason: null,
    leasedBy: null,
    leaseExpiresAt: null,
    queuedJobs: 0,
    ...overrides,
  };
}

/** A bench with one board in each status and some history. */
export function sampleSnapshot(nowMs: number = TEST_START_MS): BenchSnapshot {
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    generatedAt: iso(nowMs),
    version: '0.1.0',
    boards: [
      board({ id: 'pico', name: 'Raspberry Pi Pico', description: 'RP2040 with 2 MiB flash', mcu: 'RP2040' }),
      board({
        id: 'nucleo-f401re',
        name: 'NUCLEO-F401RE',
        mcu: 'STM32F401RE',
        backend: 'qemu',
        status: 'leased',
        leasedBy: 'ci-agent-7',
        leaseExpiresAt: iso(nowMs + 75_000),
        queuedJobs: 2,
      }),
      board({ id: 'uno', name: 'Arduino Uno', mcu: 'ATmega328P', architecture: 'avr', backend: 'sim', status: 'busy', queuedJobs: 1 }),
      board({
        id: 'stm32-probe',
        name: 'STM32 on probe',
        mcu: 'STM32F103C8',
        backend: 'probe',
        status: 'offline',
        offlineReason: 'openocd not found on PATH',
      }),
    ],
    recentActivity: [
      { jobId: 'job-3c1f', board: 'uno', agentLabel: 'fuzzer', state: 'running', at: iso(nowMs - 5_000) },
      { jobId: 'job-9a2b', board: 'pico', agentLabel: 'ci-agent-7', state: 'done', at: iso(nowMs - 60_000) },
    ],
    totals: {
      agents: 12,
      sessionsOpen: 3,
      jobsTotal: 345,
      jobsByState: { done: 300, failed: 40, queued: 3, running: 2 },
      waitlist: 17,
    },
  };
}

export interface PagesTestApp {
  baseUrl: string;
  fake: ReturnType<typeof createClock>;
  waitlist: SqlWaitlist;
  dbPath: string;
  /** Errors the router logged. */
  logged: { message: string; cause: unknown }[];
  /** Replace what the next page render sees. */
  setSnapshot(next: () => Promise<BenchSnapshot>): void;
  /** Stops the server and closes the database (the file stays, for reopening). */
  close(): Promise<void>;
}

/** Starts the pages router on 127.0.0.1:0. `dbPath` reuses a database file (restart tests). */
export async function startPagesTestApp(options: { dbPath?: string; startMs?: number } = {}): Promise<PagesTestApp> {
  const fake = createClock(options.startMs ?? TEST_START_MS);
  const clock = clockFromFakeTimers(fake);
  const dbPath = options.dbPath ?? join(mkdtempSync(join(tmpdir(), 'hilbench-pages-')), 'bench.sqlite');
  const db = new Database(dbPath);
  migrateBenchDatabase(db);
  const waitlist = new SqlWaitlist(new SqliteExecutor(db));
  let snapshot: () => Promise<BenchSnapshot> = async () => sampleSnapshot(clock.nowMs());
  const logged: { message: string; cause: unknown }[] = [];
  const app = express();
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  const baseUrl = `http://127.0.0.1:${port}`;
  app.use(
    createPagesRouter({
      clock,
      publicBaseUrl: baseUrl,
      snapshot: () => snapshot(),
      waitlist,
      csrfSecret: TEST_SECRET,
      contactEmail: 'bench@hilbench.test',
      logError: (message, cause) => logged.push({ message, cause }),
    }),
  );
  return {
    baseUrl,
    fake,
    waitlist,
    dbPath,
    logged,
    setSnapshot: (next) => {
      snapshot = next;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      db.close();
    },
  };
}

/** Removes the temporary directory of a database file made by startPagesTestApp. */
export function removeDbDir(dbPath: string): void {
  rmSync(join(dbPath, '..'), { recursive: true, force: true });
}
