import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadBoardCatalog } from '../../boards/catalog.js';
import { systemClock } from '../../core/clock.js';
import { createBackends } from '../../harness/backend-registry.js';
import { memoryLogger } from '../../server/http/logger.js';
import { type RunningBenchServer, type StartBenchServerOptions, startBenchServer } from '../../server/bench/start-bench-server.js';

/**
 * A bench service on 127.0.0.1:0 on the system clock, for tests whose clients run in real time
 * (the public client, MCP, the browser): its data in a fresh temporary folder, removed by
 * `close`. By default every board runs on its own simulator or emulator (`--backend auto`).
 */
export async function startSystemClockBench(overrides: Partial<StartBenchServerOptions> = {}): Promise<RunningBenchServer> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hilbench-bench-'));
  const boards = overrides.boards ?? loadBoardCatalog();
  const server = await startBenchServer({
    port: 0,
    dataDir,
    boards,
    clock: systemClock,
    logger: memoryLogger(),
    backend: 'auto',
    backends: () => createBackends({ clock: systemClock, boards }),
    publicBaseUrl: 'http://127.0.0.1',
    ...overrides,
  }).catch((err: unknown) => {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  });
  return {
    ...server,
    close: async () => {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
