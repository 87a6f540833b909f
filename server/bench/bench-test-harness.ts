import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClock } from '@sinonjs/fake-timers';
import { clockFromFakeTimers } from '../../core/clock.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { memoryLogger } from '../http/logger.js';
import { type BenchServiceConfig, type RunningBenchServer, startBenchServer } from './bench-service.js';

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
  close(): Promise<void>;
  /** Closes this app and starts a new one on the same data dir and clock. */
  restart(overrides?: Partial<BenchServiceConfig>): Promise<BenchTestApp>;
}

/**
 * Starts the bench service on 127.0.0.1:0 with a fake clock (not installed globally), the
 * shipped boards, the mock backend and a fresh data dir (or `dataDir` to reopen one).
 */
export async function startBenchTestApp(
  overrides: Partial<BenchServiceConfig> & { dataDir?: string; fake?: ReturnType<typeof createClock> } = {},
): Promise<BenchTestApp> {
  const fake = overrides.fake ?? createClock(TEST_START_MS);
  const dataDir = overrides.dataDir ?? mkdtempSync(path.join(tmpdir(), 'hilbench-bench-'));
  const logger = memoryLogger();
  const server = await startBenchServer({
    port: 0,
    publicBaseUrl: 'http://bench.test',
    boards: loadBoardCatalog(),
    clock: clockFromFakeTimers(fake),
    logger,
    ...overrides,
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
    close: () => server.close(),
    restart: async (more = {}) => {
      await server.close();
      return startBenchTestApp({ ...overrides, ...more, dataDir, fake });
    },
  };
  return app;
}
