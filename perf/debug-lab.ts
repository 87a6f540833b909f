import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runRemoteDebugSession } from '../bin/debug-on-server.js';
import { loadBoardCatalog } from '../boards/catalog.js';
import { startBenchServer } from '../server/bench/start-bench-server.js';
import { consoleLogger } from '../server/http/logger.js';
import { type LabBoard, startLabWorker } from './debug-lab-processes.js';

const ADMIN = 'perf-admin';

/**
 * The remote GDB bench's lab for one board (perf/debug-remote.bench.ts, decisions 0910, 1000): a
 * lab server in this process, a `hilbench worker` serving the board in a process of its own, and
 * an agent; `viaServer` runs `hilbench debug --server` as the CLI does, in this process.
 */
export interface DebugLab {
  /** One `hilbench debug --server` session on the board with `elf`: `fn` gets its GDB port; the job is then cancelled unless GDB ended it. */
  viaServer<T>(fn: (port: number) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export async function startDebugLab(lab: LabBoard, elf: string): Promise<DebugLab> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hilbench-perf-debug-'));
  const quiet = { ...consoleLogger, info: () => undefined, warn: () => undefined };
  const server = await startBenchServer({ port: 0, dataDir, publicBaseUrl: 'http://bench.perf', boards: loadBoardCatalog(), localWorker: false, adminToken: ADMIN, logger: quiet });
  const created = await fetch(`${server.url}/admin/workers`, { method: 'POST', headers: { 'x-admin-token': ADMIN }, body: new URLSearchParams({ label: `perf-debug-${lab.boardId}` }) });
  const { token: workerToken } = (await created.json()) as { token: string };
  const worker = await startLabWorker(server.url, workerToken, lab);
  const registered = await fetch(`${server.url}/api/v1/agents/register`, { method: 'POST', body: new URLSearchParams({ label: 'perf' }) });
  const { token } = (await registered.json()) as { token: string };
  const firmware = readFileSync(elf);
  return {
    async viaServer<T>(fn: (port: number) => Promise<T>): Promise<T> {
      const interrupt = new AbortController();
      let listening: (port: number) => void = () => undefined;
      const port = new Promise<number>((resolve) => (listening = resolve));
      const session = runRemoteDebugSession({
        server: server.url, token, board: lab.boardId, firmware, gdbPort: 0, idleTimeoutSeconds: 600, afterDetachSeconds: 1,
        onUart: () => undefined, log: () => undefined, onListening: (p) => listening(p), signal: interrupt.signal,
      });
      try {
        return await fn(await Promise.race([port, session.then((o) => Promise.reject(new Error(`the debug session ended first: ${o.reason}`)))]));
      } finally {
        interrupt.abort();
        await session;
      }
    },
    async close() {
      await worker.close();
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
