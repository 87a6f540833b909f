import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MockBackend } from '../../backends/mock/mock-backend.js';
import { loadBoardCatalog } from '../../boards/catalog.js';
import type { Clock } from '../../core/clock.js';
import type { BackendChoice } from '../../harness/board-resolution.js';
import { RemoteWorker, type RemoteWorkerOptions } from '../../harness/worker/remote-worker.js';

/**
 * A lab in one test process (issue 10): worker tokens made through the admin API, and
 * `RemoteWorker`s (what `hilbench worker` runs) dialling a test server over loopback HTTP.
 */

/** Creates a worker through `POST /admin/workers` of the server `request` reaches; its token is shown once. */
export async function createWorkerToken(
  request: (path: string, init: RequestInit) => Promise<Response>,
  options: { adminToken: string; label: string },
): Promise<{ worker_id: string; token: string }> {
  const res = await request('/admin/workers', { method: 'POST', headers: { 'x-admin-token': options.adminToken }, body: new URLSearchParams({ label: options.label }) });
  if (res.status !== 200) throw new Error(`creating worker ${options.label} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as { worker_id: string; token: string };
}

export interface LabWorkerOptions {
  serverUrl: string;
  token: string;
  /** The test's clock (the server's fake, usually). */
  clock: Clock;
  /** Ids of the catalog boards it serves. */
  boards: readonly string[];
  /** Default: one `MockBackend`. */
  backends?: RemoteWorkerOptions['backends'];
  /** Default `mock`. */
  choice?: BackendChoice;
  /** Instances of each emulated board it runs (decision 0510); default 1. */
  poolSizes?: RemoteWorkerOptions['poolSizes'];
}

export interface LabWorker {
  worker: RemoteWorker;
  /** Stops the worker (as `kill -9` would: no outcome, no more heartbeats) and removes its firmware cache; idempotent. */
  close(): Promise<void>;
}

/** Starts a remote worker with a firmware cache of its own; settles once it announced its boards. */
export async function startLabWorker(options: LabWorkerOptions): Promise<LabWorker> {
  const cache = mkdtempSync(path.join(tmpdir(), 'hilbench-worker-cache-'));
  const worker = new RemoteWorker({
    serverUrl: options.serverUrl,
    token: options.token,
    clock: options.clock,
    boards: loadBoardCatalog().filter((b) => options.boards.includes(b.id)),
    backends: options.backends ?? { mock: new MockBackend() },
    choice: options.choice ?? 'mock',
    ...(options.poolSizes ? { poolSizes: options.poolSizes } : {}),
    firmwareCacheDir: cache,
    logInfo: () => undefined,
    logError: () => undefined,
  });
  let closing: Promise<void> | undefined;
  // Once, however often it is called (a test stops a worker itself, the clean-up again).
  const close = () =>
    (closing ??= (async () => {
      await worker.close();
      rmSync(cache, { recursive: true, force: true });
    })());
  try {
    await worker.start();
  } catch (err) {
    await close();
    throw err;
  }
  return { worker, close };
}
