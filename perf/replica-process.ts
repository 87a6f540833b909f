/**
 * One bench replica in a process of its own, for the replicas benchmark (perf/replicas.bench.ts):
 * as `hilbench serve` runs, a replica has its own event loop, so a second replica adds a core's
 * worth of the service's own work, which replicas sharing the benchmark's process never could.
 * Started with `fork` (IPC): the parent names the data directory and, for PostgreSQL, the
 * database; the replica answers its URL once it listens, and closes when told or when the parent
 * goes away.
 */
import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { startBenchServer } from '../server/bench/start-bench-server.js';

/** What the parent sends as the process's one argument (JSON). */
export interface ReplicaProcessOptions {
  dataDir: string;
  /** Absent: the embedded SQLite store in `dataDir`. */
  databaseUrl?: string;
}

const quietLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };

const options = JSON.parse(process.argv[2] ?? '{}') as ReplicaProcessOptions;
const server = await startBenchServer({
  port: 0,
  dataDir: options.dataDir,
  boards: loadBoardCatalog(),
  ...(options.databaseUrl === undefined ? {} : { databaseUrl: options.databaseUrl }),
  clock: systemClock,
  publicBaseUrl: 'http://127.0.0.1',
  logger: quietLogger,
  limits: { agentRegistrationsPerMinute: 1_000_000 },
  checkImage: () => undefined,
});
let closing: Promise<void> | undefined;
const close = () => {
  closing ??= server.close().finally(() => process.disconnect?.());
  return closing;
};
process.on('message', (message) => {
  if (message === 'close') void close();
});
process.on('disconnect', () => void close());
process.send?.({ url: server.url });
