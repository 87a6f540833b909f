/**
 * A `hilbench serve`-like bench service for a benchmark: every board of the catalog on the
 * backends this host has (`auto`), the system clock, a quiet logger, a fresh data directory, and
 * one registered agent's client. `close()` stops it and removes the directory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { createBackends } from '../harness/backend-registry.js';
import { BenchClient } from '../clients/bench/bench-client.js';
import { type RunningBenchServer, startBenchServer } from '../server/bench/start-bench-server.js';
import type { LocalWorkerOptions } from '../server/bench/workers/local-worker.js';

const quietLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };

export interface LocalBench {
  server: RunningBenchServer;
  /** A registered agent's client. */
  client: BenchClient;
  close(): Promise<void>;
}

export async function startLocalBench(name: string, options: { localWorker?: LocalWorkerOptions } = {}): Promise<LocalBench> {
  const boards = loadBoardCatalog();
  const dataDir = mkdtempSync(path.join(tmpdir(), `hilbench-${name}-bench-`));
  const server = await startBenchServer({
    port: 0,
    dataDir,
    boards,
    clock: systemClock,
    logger: quietLogger,
    backend: 'auto',
    backends: () => createBackends({ clock: systemClock, boards }),
    publicBaseUrl: 'http://127.0.0.1',
    ...(options.localWorker ? { localWorker: options.localWorker } : {}),
  });
  const close = async () => {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const anonymous = new BenchClient({ baseUrl: server.url });
    const client = anonymous.withToken((await anonymous.register(name)).token);
    return { server, client, close };
  } catch (err) {
    await close();
    throw err;
  }
}
