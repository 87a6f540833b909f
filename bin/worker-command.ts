import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { type Command, Option } from 'commander';
import { backendNames } from '../boards/backend-names.js';
import { defaultBoardsDir } from '../boards/boards-dir.js';
import type { QuarantineStore } from '../backends/probe/quarantine-store.js';
import { type LogLevel, logLevels } from '../server/http/log-levels.js';
import { looksLikeWorkerToken } from '../server/bench/workers/worker-token-format.js';
import { POOL_SIZE_HELP, poolSizeValues } from './cli-options.js';

/**
 * `hilbench worker` (a bench worker next to the hardware, dialing a lab server) and
 * `hilbench worker-token` (an administrator's worker credentials, through the server's API).
 * What they run is loaded when they run: `hilbench --help` loads none of it.
 */
export function addWorkerCommands(program: Command): void {
  program
    .command('worker')
    .description('Run a bench worker: serve this host’s boards to a lab server, dialing out (docs/worker-protocol.md).')
    .addOption(new Option('--server <url>', 'the bench server').env('HILBENCH_SERVER').makeOptionMandatory())
    .addOption(new Option('--token <token>', 'the worker token (hbw_...); prefer --token-file').env('HILBENCH_WORKER_TOKEN'))
    .addOption(new Option('--token-file <file>', 'a file holding the worker token').env('HILBENCH_WORKER_TOKEN_FILE'))
    .addOption(new Option('--boards <ids>', 'comma-separated board ids this worker serves (default: every catalog board its backend lists)').env('HILBENCH_WORKER_BOARDS'))
    .addOption(new Option('--backend <name>', 'which backend runs the boards').env('HILBENCH_BACKEND').default('auto').choices(['auto', ...backendNames]))
    .addOption(new Option('--boards-dir <dir>', 'board catalog folder').env('HILBENCH_BOARDS_DIR').default(defaultBoardsDir))
    .addOption(new Option('--bench-file <file>', 'real boards attached to this host (docs/bench-file.md); enables the probe backend').env('HILBENCH_BENCH_FILE'))
    .addOption(new Option('--rp2040-bootrom <file>', 'RP2040 B1 boot ROM for Pico SDK images').env('HILBENCH_RP2040_BOOTROM'))
    .addOption(new Option('--qemu <path>', 'qemu-system-arm executable').env('HILBENCH_QEMU'))
    .addOption(new Option('--renode <path>', 'Renode executable').env('HILBENCH_RENODE'))
    .addOption(new Option('--cache-dir <dir>', 'where fetched firmware is kept by sha256').env('HILBENCH_WORKER_CACHE_DIR'))
    .addOption(new Option('--log-level <level>', 'JSON log lines on stderr from this level up').env('HILBENCH_LOG_LEVEL').default('info').choices([...logLevels]))
    .addOption(new Option('--pool-size <n|board=n>', POOL_SIZE_HELP).env('HILBENCH_POOL_SIZE').argParser(poolSizeValues))
    .action(async (opts: WorkerOptions) => {
      const token = workerToken(opts);
      const { cliPoolSizes } = await import('../harness/worker/pool-size.js');
      const poolSizes = cliPoolSizes(opts.poolSize ?? []);
      // Timers that keep the process alive: while the server is away the worker's only work is a
      // wait before dialling again, and on systemClock's unref'd timers Node would exit instead.
      const { foregroundClock: clock } = await import('../core/clock.js');
      const { loadBoardCatalog } = await import('../boards/catalog.js');
      const { createBackends } = await import('../harness/backend-registry.js');
      const { RemoteWorker } = await import('../harness/worker/remote-worker.js');
      const { pinoLogger } = await import('../server/http/pino-logger.js');
      // The same JSON lines as the server's (docs/deployment.md, "Logs"); the start and stop lines stay plain on stdout.
      const logger = pinoLogger({ level: opts.logLevel as LogLevel, name: 'hilbench-worker' });
      const catalog = loadBoardCatalog(opts.boardsDir);
      const wanted = opts.boards?.split(',').map((b) => b.trim()).filter(Boolean);
      const unknown = (wanted ?? []).filter((id) => !catalog.some((b) => b.id === id));
      if (unknown.length > 0) throw new Error(`--boards names boards the catalog does not have: ${unknown.join(', ')}`);
      const boards = catalog.filter((b) => (wanted ? wanted.includes(b.id) : opts.backend === 'auto' || opts.backend in b.backends));
      // Board health (quarantine) is kept by the server, so every replica sees it (docs/lab.md).
      const backends = ({ quarantineStore }: { quarantineStore: QuarantineStore }) =>
        createBackends({
          clock,
          boards,
          benchFile: opts.benchFile,
          rp2040BootromPath: opts.rp2040Bootrom,
          qemuBinary: opts.qemu,
          renodePath: opts.renode,
          quarantineStore,
        });
      const cacheDir = opts.cacheDir ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'), 'hilbench', 'firmware');
      const worker = new RemoteWorker({
        serverUrl: opts.server,
        token,
        clock,
        boards,
        backends,
        choice: opts.backend as never,
        poolSizes,
        firmwareCacheDir: cacheDir,
        logInfo: (message) => logger.info(message),
        logError: (message, cause) => logger.error(message, cause),
      });
      const answer = await worker.start();
      console.log(`hilbench worker ${answer.label} (${answer.worker_id}) serving ${boards.map((b) => b.id).join(', ')} for ${opts.server}`);
      const stop = async (signal: string) => {
        console.log(`${signal}: stopping (running jobs are left for the server to fail as interrupted)`);
        await worker.close();
        process.exit(0);
      };
      process.on('SIGINT', () => void stop('SIGINT'));
      process.on('SIGTERM', () => void stop('SIGTERM'));
    });

  const tokens = program.command('worker-token').description('Create, list and revoke bench worker tokens through a server’s admin API.');
  const adminOptions = (command: Command) =>
    command
      .addOption(new Option('--server <url>', 'the bench server').env('HILBENCH_SERVER').makeOptionMandatory())
      .addOption(new Option('--admin-token <token>', 'the server’s administrator token').env('HILBENCH_ADMIN_TOKEN').makeOptionMandatory());
  adminOptions(tokens.command('create').description('Create a worker; prints its token once.'))
    .requiredOption('--label <label>', 'a name for the worker, e.g. the host')
    .action(async (opts: { server: string; adminToken: string; label: string }) => {
      const created = (await adminCall(opts, 'POST', '/admin/workers', { label: opts.label })) as { worker_id: string; token: string };
      // The token alone on stdout, so `> pi-1.token` writes a file `--token-file` takes; the note is for the person.
      console.error(`worker ${created.worker_id} (${opts.label}) created; its token, shown once:`);
      console.log(created.token);
    });
  adminOptions(tokens.command('list').description('List workers: online, last heard from, boards.')).action(async (opts: { server: string; adminToken: string }) => {
    console.log(JSON.stringify(await adminCall(opts, 'GET', '/admin/workers'), null, 2));
  });
  adminOptions(tokens.command('revoke').description('Revoke a worker’s token; its running jobs fail as interrupted.'))
    .argument('<worker_id>')
    .action(async (workerId: string, opts: { server: string; adminToken: string }) => {
      console.log(JSON.stringify(await adminCall(opts, 'POST', `/admin/workers/${encodeURIComponent(workerId)}/revoke`), null, 2));
    });
}

interface WorkerOptions {
  server: string;
  token?: string;
  tokenFile?: string;
  boards?: string;
  backend: string;
  boardsDir: string;
  benchFile?: string;
  rp2040Bootrom?: string;
  qemu?: string;
  renode?: string;
  cacheDir?: string;
  logLevel: string;
  poolSize?: string[];
}

function workerToken(opts: WorkerOptions): string {
  const token = opts.tokenFile ? readFileSync(opts.tokenFile, 'utf8').trim() : opts.token;
  if (!token) throw new Error('a worker token is needed: --token-file <file> or --token (create one with hilbench worker-token create)');
  // Refused here, without echoing it: sent as it is, it fails every call and the failure logs it.
  if (!looksLikeWorkerToken(token)) {
    const source = opts.tokenFile ? `--token-file ${opts.tokenFile}` : '--token';
    throw new Error(`${source} does not hold a worker token (one line, hbw_...): put only the token hilbench worker-token create prints on stdout there`);
  }
  return token;
}

async function adminCall(opts: { server: string; adminToken: string }, method: 'GET' | 'POST', route: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${opts.server.replace(/\/+$/, '')}${route}`, {
    method,
    headers: { 'x-admin-token': opts.adminToken, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = (await res.json().catch(() => ({ detail: `${res.status} ${res.statusText}` }))) as { detail?: unknown };
  if (!res.ok) throw new Error(`the server answered ${res.status}: ${typeof answer.detail === 'string' ? answer.detail : JSON.stringify(answer.detail)}`);
  return answer;
}
