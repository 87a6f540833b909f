#!/usr/bin/env node
/**
 * The `hilbench` command line. The only place that reads `process.argv`/`process.env` and calls
 * `process.exit`; everything else takes options objects. This file defines the commands and their
 * options only: what a command runs is imported when it runs, so `hilbench --help` and
 * `--version` load commander and nothing else of weight (docs/performance.md, "Start-up").
 */
import { Command, Option } from 'commander';
import { defaultBoardsDir } from '../boards/boards-dir.js';
import { defaultBenchLimits, type BenchLimits } from '../server/bench/domain/bench-limits.js';
import { DEFAULT_BODY_STALL_TIMEOUT_MS, DEFAULT_MAX_CONNECTIONS, DEFAULT_MIN_BODY_BYTES_PER_SECOND } from '../server/http/listen.js';
import { logLevels } from '../server/http/log-levels.js';
import { DEFAULT_DATABASE_POOL_SIZE, MAX_DATABASE_POOL_SIZE } from '../server/storage/postgres/database-pool-size.js';
import { defaultRelayRateLimits } from '../server/relay/relay-rate-limits.js';
import type { BoardsOptions } from './boards-command.js';
import { backendChoices, connectionCount, POOL_SIZE_HELP, poolSizeValues, databasePoolSize, durationOption, httpUrl, envName, kebab, packageVersion, port, positiveNumber, requestCount, variable, wholeNumber } from './cli-options.js';
import { addDebugCommand } from './debug-command.js';
import { addFlashCommand } from './flash-command.js';
import { addWorkerCommands } from './worker-command.js';

const program = new Command()
  .name('hilbench')
  .description('Hardware-in-the-loop bench: one HTTP API over mock, simulated, emulated and real microcontroller boards.')
  .version(packageVersion(), '-V, --version', 'print the hilbench version')
  // A usage error prints its one line and where to look, not the whole help.
  .showHelpAfterError('(see hilbench <command> --help)');

const serve = program
  .command('serve')
  .description('Start the bench service (and the relay service beside it) on an embedded SQLite data directory.')
  .addOption(new Option('--port <port>', 'bench service port').env('HILBENCH_PORT').default(8080).argParser(port))
  .addOption(new Option('--host <host>', 'interface to listen on').env('HILBENCH_HOST').default('127.0.0.1'))
  .addOption(new Option('--data-dir <dir>', 'SQLite files, firmware blobs, keys').env('HILBENCH_DATA_DIR').default('data'))
  .addOption(
    new Option('--database-url <url>', 'keep the bench state and the relay\'s tables in PostgreSQL (postgres://user:pass@host/db) so several replicas can serve them; each replica keeps its own --data-dir')
      .env('HILBENCH_DATABASE_URL'),
  )
  .addOption(
    new Option('--database-pool-size <n>', `PostgreSQL connections the bench store of this replica opens, 1-${MAX_DATABASE_POOL_SIZE} (default ${DEFAULT_DATABASE_POOL_SIZE}; with --database-url)`)
      .env('HILBENCH_DATABASE_POOL_SIZE')
      .argParser(databasePoolSize),
  )
  .addOption(
    new Option('--replica-url <url>', "this replica's own address, reachable by the other replicas (not the load balancer's): they forward the debug streams of jobs it hands out to it (docs/deployment.md)")
      .env('HILBENCH_REPLICA_URL')
      .argParser(httpUrl),
  )
  .addOption(new Option('--public-url <url>', 'the bench address clients use (default: the listening address)').env('HILBENCH_PUBLIC_URL'))
  .addOption(new Option('--admin-token <token>', 'enables GET /admin with header x-admin-token').env('HILBENCH_ADMIN_TOKEN'))
  .addOption(new Option('--contact-email <email>', 'operator contact published in /.well-known/ai-plugin.json (left out when unset)').env('HILBENCH_CONTACT_EMAIL'))
  .addOption(
    new Option('--backend <name>', 'which backend runs the boards: auto (each board on its own simulator, emulator or probe; boards with none here are offline, with the reason), mock (every board, nothing executed), or one backend for all')
      .env('HILBENCH_BACKEND')
      .default('auto')
      .choices(backendChoices),
  )
  .addOption(new Option('--boards-dir <dir>', 'board catalog folder').env('HILBENCH_BOARDS_DIR').default(defaultBoardsDir))
  .addOption(new Option('--bench-file <file>', 'real boards attached to this host (docs/bench-file.md); enables the probe backend').env('HILBENCH_BENCH_FILE'))
  .addOption(new Option('--rp2040-bootrom <file>', 'RP2040 B1 boot ROM for Pico SDK images').env('HILBENCH_RP2040_BOOTROM'))
  .addOption(new Option('--qemu <path>', 'qemu-system-arm executable').env('HILBENCH_QEMU'))
  .addOption(new Option('--renode <path>', 'Renode executable').env('HILBENCH_RENODE'))
  .addOption(new Option('--relay-port <port>', 'relay service port').env('HILBENCH_RELAY_PORT').default(8081).argParser(port))
  .addOption(new Option('--relay-public-url <url>', 'the relay origin clients use (they sign it into registrations); needed behind a proxy or on 0.0.0.0').env('HILBENCH_RELAY_PUBLIC_URL'))
  .addOption(new Option('--relay-peers <urls>', 'comma-separated peer relay base URLs to federate with').env('HILBENCH_RELAY_PEERS'))
  .addOption(
    new Option('--relay-probe-interval-seconds <s>', 'probe and pull from peers this often; 0: only on POST /reach/probe')
      .env('HILBENCH_RELAY_PROBE_INTERVAL_SECONDS')
      .default(60)
      .argParser((v) => (v === '0' ? 0 : positiveNumber(v))),
  )
  .addOption(new Option('--relay-operators <ids>', 'comma-separated node ids allowed to add and probe peers (POST /reach, /reach/probe); default nobody').env('HILBENCH_RELAY_OPERATORS'))
  .addOption(
    new Option('--relay-peer-offence-limit <n>', 'documents failing verification a peer may serve before it is suspended until an operator adds it again (default 10)')
      .env('HILBENCH_RELAY_PEER_OFFENCE_LIMIT')
      .argParser(requestCount),
  )
  .addOption(new Option('--relay-allow-private-peers', 'let operators add peers on loopback or private addresses (test networks)'))
  .addOption(new Option('--relay-seeds <urls>', 'comma-separated seed relay URLs published by GET /seeds').env('HILBENCH_RELAY_SEEDS'))
  .addOption(new Option('--relay-self-slice <file>', "the relay node's own slice, a quorum set {t, v, i} in YAML or JSON (docs/scp-s5.md); default: the operators plus the configured peers' relay nodes at 67 %, none without either (docs/relay-api.md)").env('HILBENCH_RELAY_SELF_SLICE'))
  .addOption(
    new Option('--relay-sms-webhook-url <url>', 'deliver one-time codes by POSTing {"to","text"} here instead of the local outbox; HILBENCH_RELAY_SMS_WEBHOOK_AUTHORIZATION sets its Authorization header').env(
      'HILBENCH_RELAY_SMS_WEBHOOK_URL',
    ),
  )
  .addOption(
    new Option('--trust-proxy-hops <n>', 'reverse proxies in front of both services whose X-Forwarded-For the per-client rate limits trust; 0: the connected address')
      .env('HILBENCH_TRUST_PROXY_HOPS')
      .default(0)
      .argParser(wholeNumber),
  )
  .addOption(
    new Option('--max-connections <n>', `connections each service holds open at once; a newcomer closes the longest-stalled request head, or is closed when none (default ${DEFAULT_MAX_CONNECTIONS})`)
      .env('HILBENCH_MAX_CONNECTIONS')
      .argParser(connectionCount),
  )
  .addOption(
    new Option('--body-stall-seconds <s>', `a request body must bring --min-body-bytes-per-second over every window of this while it is read, or is answered 408 and closed; one behind is closable for room (default ${DEFAULT_BODY_STALL_TIMEOUT_MS / 1000})`)
      .env('HILBENCH_BODY_STALL_SECONDS')
      .argParser(positiveNumber),
  )
  .addOption(
    new Option('--min-body-bytes-per-second <n>', `the pace of --body-stall-seconds; 0: only a window without a byte is cut (default ${DEFAULT_MIN_BODY_BYTES_PER_SECOND})`)
      .env('HILBENCH_MIN_BODY_BYTES_PER_SECOND')
      .argParser(wholeNumber),
  )
  .addOption(
    new Option('--relay-registrations-per-minute <n>', `POST /register per client address per minute (default ${defaultRelayRateLimits.registrationsPerMinute})`)
      .env('HILBENCH_RELAY_REGISTRATIONS_PER_MINUTE')
      .argParser(requestCount),
  )
  .addOption(
    new Option('--relay-sign-ins-per-minute <n>', `POST /session, /login, /login/verify, /recover/start, /recover/finish per client address per minute (default ${defaultRelayRateLimits.signInsPerMinute})`)
      .env('HILBENCH_RELAY_SIGN_INS_PER_MINUTE')
      .argParser(requestCount),
  )
  .addOption(new Option('--no-relay', 'do not start the relay service'))
  .addOption(new Option('--no-mcp', 'do not serve MCP at /mcp (docs/mcp.md)'))
  .addOption(new Option('--no-waitlist', "turn off the home page's waitlist (this bench operator's list of who wants more boards here)"))
  .addOption(new Option('--log-level <level>', 'JSON log lines on stderr from this level up').env('HILBENCH_LOG_LEVEL').default('info').choices([...logLevels]))
  .addOption(new Option('--metrics-token <token>', 'GET /metrics of the bench and of the relay answers only "authorization: Bearer <token>" (default: open)').env('HILBENCH_METRICS_TOKEN'))
  .addOption(new Option('--no-local-worker', 'run no bench worker in this process: jobs run on remote workers (hilbench worker; docs/worker-protocol.md)'))
  .addOption(new Option('--pool-size <n|board=n>', `the in-process worker's ${POOL_SIZE_HELP}`).env('HILBENCH_POOL_SIZE').argParser(poolSizeValues))
  .addOption(new Option('--worker-heartbeat-seconds <s>', 'how often remote workers send a heartbeat (default 5)').env('HILBENCH_WORKER_HEARTBEAT_SECONDS').argParser(positiveNumber))
  .addOption(new Option('--worker-offline-after-seconds <s>', 'a remote worker unheard of this long is offline, with its boards (default 15)').env('HILBENCH_WORKER_OFFLINE_AFTER_SECONDS').argParser(positiveNumber))
  .addOption(new Option('--worker-claim-seconds <s>', "a remote worker's running job fails as interrupted when its claim is not renewed within this (default 30)").env('HILBENCH_WORKER_CLAIM_SECONDS').argParser(positiveNumber));
for (const key of Object.keys(defaultBenchLimits) as Array<keyof BenchLimits>) {
  serve.addOption(
    new Option(`--${kebab(key)} <n>`, `limit (default ${defaultBenchLimits[key]})`).env(envName(key)).argParser(positiveNumber),
  );
}

serve.action(async (opts: Record<string, unknown>) => {
  const { serveCommand } = await import('./serve-command.js');
  await serveCommand(opts);
});

program
  .command('mcp')
  .description('The bench as MCP tools on stdin/stdout for an AI agent (docs/mcp.md): against --server, or a bench in this process on the simulators.')
  .addOption(new Option('--server <url>', 'a bench server (else: one in this process, every board on its own simulator or emulator)').env('HILBENCH_URL'))
  .addOption(new Option('--token <token>', 'the agent token for --server (else: a new agent is registered)').env('HILBENCH_TOKEN'))
  .action(async (opts: { server?: string; token?: string }) => {
    const { mcpCommand } = await import('./mcp-command.js');
    await mcpCommand(opts);
  });

addWorkerCommands(program);
addFlashCommand(program);
addDebugCommand(program);

program
  .command('boards')
  .description('List the board catalog and which backend can run each board on this host.')
  .addOption(new Option('--boards-dir <dir>', 'board catalog folder').env('HILBENCH_BOARDS_DIR').default(defaultBoardsDir))
  .addOption(
    new Option('--backend <name>', "as for serve; default auto: what each board's own simulator, emulator or probe can do on this host")
      .env('HILBENCH_BACKEND')
      .default('auto')
      .choices(backendChoices),
  )
  .addOption(new Option('--bench-file <file>', 'real boards attached to this host').env('HILBENCH_BENCH_FILE'))
  .addOption(new Option('--rp2040-bootrom <file>', 'RP2040 B1 boot ROM for Pico SDK images').env('HILBENCH_RP2040_BOOTROM'))
  .addOption(new Option('--qemu <path>', 'qemu-system-arm executable').env('HILBENCH_QEMU'))
  .addOption(new Option('--renode <path>', 'Renode executable').env('HILBENCH_RENODE'))
  .option('--json', 'print JSON')
  .action(async (opts: BoardsOptions) => {
    const { boardsCommand } = await import('./boards-command.js');
    await boardsCommand(opts);
  });

program
  .command('run')
  .description('Replay scenario files (docs/scenarios.md) against an in-process bench and relay on a fake clock, or remote services. Exit 0 pass, 1 a scenario failed, 2 invalid file or target, 42 a wait timed out.')
  .argument('<files...>', 'scenario files, folders (every .yaml under them) or globs (e.g. "scenarios/*.yaml")')
  .addOption(new Option('--backend <name>', 'backend of the in-process bench and of device steps').env('HILBENCH_BACKEND').default('mock').choices(backendChoices))
  .addOption(new Option('--bench-url <url>', 'replay bench steps against this remote bench service, in real time').env('HILBENCH_BENCH_URL'))
  .addOption(new Option('--relay-url <url>', 'replay relay steps against this remote relay service, in real time').env('HILBENCH_RELAY_URL'))
  .addOption(new Option('--bench-file <file>', 'real boards attached to this host (docs/bench-file.md); needed by --backend probe').env('HILBENCH_BENCH_FILE'))
  .option('--junit <file>', 'write a JUnit XML report')
  .option('--json <file>', 'write a JSON report')
  .option('--verbose', 'show serial output live (device UART as it comes, a job\'s UART when it is read finished)')
  .option('--serial-log-dir <dir>', 'write each scenario\'s whole serial log to <dir>/<file name>.log')
  .option('--var <name=value>', 'set a scenario variable (repeatable)', variable)
  .option('--timeout <duration>', "default timeout of every wait, over the files' own (500ms, 30s, 2m, 1h)", durationOption)
  .option('--time-limit <duration>', "the most real time each scenario may take, over the files' own time-limit (default 10m)", durationOption)
  .addOption(new Option('--boards-dir <dir>', 'board catalog folder').env('HILBENCH_BOARDS_DIR').default(defaultBoardsDir))
  // Usage errors are exit 2 for `run` (docs/scenarios.md), as an invalid scenario file is.
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2))
  .action(async (files: string[], opts: { backend: string; benchUrl?: string; relayUrl?: string; junit?: string; json?: string; verbose?: boolean; serialLogDir?: string; var?: Record<string, string>; timeout?: number; timeLimit?: number; boardsDir: string; benchFile?: string }) => {
    const { runCommand } = await import('./run-command.js');
    const code = await runCommand({
      files,
      backend: opts.backend as never,
      ...(opts.benchUrl ? { benchUrl: opts.benchUrl } : {}),
      ...(opts.relayUrl ? { relayUrl: opts.relayUrl } : {}),
      ...(opts.junit ? { junit: opts.junit } : {}),
      ...(opts.json ? { json: opts.json } : {}),
      ...(opts.verbose ? { verbose: true } : {}),
      ...(opts.serialLogDir ? { serialLogDir: opts.serialLogDir } : {}),
      vars: opts.var ?? {},
      ...(opts.timeout !== undefined ? { timeoutMs: opts.timeout } : {}),
      ...(opts.timeLimit !== undefined ? { timeLimitMs: opts.timeLimit } : {}),
      boardsDir: opts.boardsDir,
      ...(opts.benchFile ? { benchFile: opts.benchFile } : {}),
    });
    process.exit(code);
  });

program
  .command('record')
  .description('Record an agent session as a scenario file: a recording reverse proxy on loopback in front of a bench (and relay) service. Stop with Ctrl-C to write the file.')
  .requiredOption('--target <url>', 'the bench service to forward to')
  .option('--relay-target <url>', 'the relay service to forward to (served under /relay on the proxy)')
  .requiredOption('--out <file>', 'scenario file to write (firmware goes to firmware/<sha256>.elf beside it)')
  .addOption(new Option('--port <port>', 'proxy port on 127.0.0.1 (0: any free port)').default(8090).argParser(port))
  .option('--name <name>', 'scenario name')
  .action(async (opts: { target: string; relayTarget?: string; out: string; port: number; name?: string }) => {
    const { recordCommand } = await import('./record-command.js');
    const code = await recordCommand({
      target: opts.target,
      ...(opts.relayTarget ? { relayTarget: opts.relayTarget } : {}),
      out: opts.out,
      port: opts.port,
      ...(opts.name ? { name: opts.name } : {}),
    });
    process.exit(code);
  });

try {
  await program.parseAsync(process.argv);
} catch (err) {
  console.error(`hilbench: ${(err as Error).message}`);
  process.exit(1);
}
