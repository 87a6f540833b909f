import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClock } from '@sinonjs/fake-timers';
import { afterAll } from 'vitest';
import { clockFromFakeTimers, systemClock } from '../../core/clock.js';
import { waitUntil } from '../../core/wait.js';
import type { JobState } from '../../server/storage/bench/bench-store.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { memoryLogger } from '../../server/http/logger.js';
import type { BenchServiceConfig } from '../../server/bench/bench-service.js';
import { type RunningBenchServer, type StartBenchServerOptions, startBenchServer } from '../../server/bench/start-bench-server.js';

/** 2026-01-01T00:00:00Z: every test starts its fake clock here, so times in answers are exact. */
export const TEST_START_MS = Date.UTC(2026, 0, 1);

export interface BenchTestApp {
  url: string;
  fake: ReturnType<typeof createClock>;
  server: RunningBenchServer;
  dataDir: string;
  logger: ReturnType<typeof memoryLogger>;
  /** `fetch` relative to the app. */
  request(pathAndQuery: string, init?: RequestInit): Promise<Response>;
  /** Registers an agent and returns its id and token. */
  register(label?: string): Promise<{ agentId: string; token: string }>;
  /** Waits until every job the app started has settled (the mock needs no clock time). */
  idle(): Promise<void>;
  /**
   * Waits (bounded, 20 s of host time, failing with the state it last saw) until job `jobId` is in
   * one of `states` in the store: a worker claims and starts a job through several async steps.
   */
  jobReaches(jobId: string, ...states: JobState[]): Promise<void>;
  /** Settles once the worker in the app's process has started job `jobId`: its deadline timer is set on the fake clock. */
  jobStarted(jobId: string): Promise<void>;
  close(): Promise<void>;
  /** Closes this app and starts a new one on the same data dir and clock. */
  restart(overrides?: Partial<BenchServiceConfig>): Promise<BenchTestApp>;
}

/** Data dirs made by startBenchTestApp in this test file and not yet removed. */
const madeDataDirs = new Set<string>();

function makeDataDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'hilbench-bench-'));
  madeDataDirs.add(dir);
  return dir;
}

/**
 * Removes every data dir startBenchTestApp made (not ones a caller passed in). Runs after each
 * test file, not in `close`: tests close an app, edit its files and `restart` it on the same dir.
 * Without it a full run left hundreds of hilbench-bench-* dirs in /tmp.
 */
export function removeMadeDataDirs(): void {
  for (const dir of madeDataDirs) rmSync(dir, { recursive: true, force: true });
  madeDataDirs.clear();
}

// Registered when a test file imports this module, so it runs once that file's tests are done.
afterAll(removeMadeDataDirs);

/**
 * Starts the bench service on 127.0.0.1:0 (or `port`) with a fake clock (not installed globally),
 * the shipped boards, the mock backend and a fresh data dir (or `dataDir` to reopen one).
 */
export async function startBenchTestApp(
  overrides: Partial<BenchServiceConfig> & Pick<StartBenchServerOptions, 'maxConnections' | 'headersTimeoutMs'> & { dataDir?: string; fake?: ReturnType<typeof createClock>; port?: number } = {},
): Promise<BenchTestApp> {
  const fake = overrides.fake ?? createClock(TEST_START_MS);
  const dataDir = overrides.dataDir ?? makeDataDir();
  const logger = memoryLogger();
  const server = await startBenchServer({
    publicBaseUrl: 'http://bench.test',
    boards: loadBoardCatalog(),
    clock: clockFromFakeTimers(fake),
    logger,
    ...overrides,
    // A server started again on the port it had (workers dial a fixed address), else a free one.
    port: overrides.port ?? 0,
    // Tests register many agents from one loopback address on a clock that barely moves: rate limits
    // far above that unless a test sets its own (the rate-limit tests set the defaults).
    limits: { agentRegistrationsPerMinute: 100_000, waitlistJoinsPerMinute: 100_000, ...overrides.limits },
    dataDir,
  });
  const app: BenchTestApp = {
    url: server.url,
    fake,
    server,
    dataDir,
    logger,
    request: (p, init) => fetch(`${server.url}${p}`, init),
    register: async (label = 'agent') => {
      const res = await fetch(`${server.url}/api/v1/agents/register`, { method: 'POST', body: new URLSearchParams({ label }) });
      if (res.status !== 200) throw new Error(`register failed: ${res.status} ${await res.text()}`);
      const body = (await res.json()) as { agent_id: string; token: string };
      return { agentId: body.agent_id, token: body.token };
    },
    idle: () => server.service.bench.idle(),
    jobStarted: (jobId) => server.service.bench.jobStarted(jobId),
    jobReaches: async (jobId, ...states) => {
      let seen = 'not looked at yet';
      await waitUntil(
        systemClock,
        async () => {
          const job = await server.service.store.getJob(jobId);
          seen = job?.state ?? 'missing';
          return job && states.includes(job.state) ? job : undefined;
        },
        { timeoutMs: 20_000, pollMs: 2, describe: `job ${jobId} to be ${states.join(' or ')}`, lastSeen: () => `state ${seen}` },
      );
    },
    close: () => server.close(),
    restart: async (more = {}) => {
      await server.close();
      return startBenchTestApp({ ...overrides, ...more, dataDir, fake });
    },
  };
  return app;
}
