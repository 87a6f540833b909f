import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { loadBoardCatalog } from '../boards/catalog.js';
import { systemClock } from '../core/clock.js';
import { type QuorumSet, validateQuorumSet } from '../core/relay/quorum-set.js';
import { coreProblemMessage } from '../wire/problem-detail.js';
import { createBackends } from '../harness/backend-registry.js';
import { cliPoolSizes } from '../harness/worker/pool-size.js';
import { type BenchLimits, defaultBenchLimits } from '../server/bench/domain/bench-limits.js';
import type { BackendsContext } from '../server/bench/bench-service.js';
import { startBenchServer } from '../server/bench/start-bench-server.js';
import { type LogLevel, pinoLogger } from '../server/http/pino-logger.js';
import { startRelayServer } from '../server/relay/relay-service.js';
import { WebhookSmsSender } from '../server/relay/domain/sms-sender.js';
import { redactDatabaseUrl } from '../server/storage/postgres/pg-pool.js';
import { mcpHttpHandler } from '../lib/mcp/mcp-server.js';
import { commaList, wildcardAddressWarnings } from './cli-options.js';
import { loadBenchFile } from '../backends/probe/bench-file.js';

/** `hilbench serve`: the bench service and the relay beside it, until SIGINT or SIGTERM. Loaded only when it runs. */
export async function serveCommand(opts: Record<string, unknown>): Promise<void> {
  const clock = systemClock;
  // The data dir holds e-mails, phone numbers and keys: whatever this process creates there (or
  // anywhere) is owner-only unless made otherwise (decision 0222). The services set explicit modes
  // too, for library users; this covers files a dependency creates with its own default.
  process.umask(0o077);
  const dataDir = path.resolve(String(opts.dataDir));
  const boards = loadBoardCatalog(String(opts.boardsDir));
  // Read once before the data dir is touched: a bad bench file (two entries for one physical board,
  // say) is refused with nothing created; the backends read it again once the database is open.
  if (typeof opts.benchFile === 'string') loadBenchFile(opts.benchFile);
  const limits: Partial<BenchLimits> = {};
  for (const key of Object.keys(defaultBenchLimits) as Array<keyof BenchLimits>) {
    if (typeof opts[key] === 'number') limits[key] = opts[key] as number;
  }
  // Built once the database is open: the probe backend keeps board health (quarantine) in it.
  const backends = ({ quarantineStore }: BackendsContext) =>
    createBackends({
      clock,
      boards,
      benchFile: opts.benchFile as string | undefined,
      rp2040BootromPath: opts.rp2040Bootrom as string | undefined,
      qemuBinary: opts.qemu as string | undefined,
      renodePath: opts.renode as string | undefined,
      quarantineStore,
      onAutomaticHealthCheck: ({ boardId, attempt, outcome, nextInMs }) =>
        console.log(
          `board ${boardId}: automatic health check ${attempt} ${outcome.passed ? 'passed: released from quarantine' : `failed: ${outcome.reason ?? 'no reason given'}`}` +
            (nextInMs === undefined ? '' : `; next in ${Math.round(nextInMs / 1000)} s`),
        ),
    });
  const host = String(opts.host);
  const logger = pinoLogger({ level: opts.logLevel as LogLevel, name: 'hilbench' });
  // MCP tools call this service's own API with the caller's token, on the listening address.
  let ownUrl = '';
  const mcp = opts.mcp === false ? undefined : mcpHttpHandler(() => ownUrl);
  const bench = await startBenchServer({
    logger,
    metricsToken: opts.metricsToken as string | undefined,
    port: opts.port as number,
    host,
    ...(typeof opts.maxConnections === 'number' ? { maxConnections: opts.maxConnections } : {}),
    ...bodyPaceOf(opts),
    dataDir,
    clock,
    boards,
    backends,
    backend: opts.backend as never,
    adminToken: opts.adminToken as string | undefined,
    pages: { contactEmail: opts.contactEmail as string | undefined, waitlist: opts.waitlist !== false },
    ...(mcp ? { mcp } : {}),
    // Absent: the bound address (with --port 0, the port picked).
    ...(typeof opts.publicUrl === 'string' && opts.publicUrl !== '' ? { publicBaseUrl: opts.publicUrl } : {}),
    limits,
    trustProxyHops: opts.trustProxyHops as number,
    localWorker: opts.localWorker === false ? false : { poolSizes: cliPoolSizes((opts.poolSize as string[] | undefined) ?? []) },
    ...(typeof opts.databaseUrl === 'string' && opts.databaseUrl !== '' ? { databaseUrl: opts.databaseUrl } : {}),
    ...(typeof opts.databasePoolSize === 'number' ? { databasePoolSize: opts.databasePoolSize } : {}),
    ...(typeof opts.replicaUrl === 'string' ? { replicaUrl: opts.replicaUrl } : {}),
    workerTimings: {
      ...(typeof opts.workerHeartbeatSeconds === 'number' ? { heartbeatSeconds: opts.workerHeartbeatSeconds } : {}),
      ...(typeof opts.workerOfflineAfterSeconds === 'number' ? { offlineAfterSeconds: opts.workerOfflineAfterSeconds } : {}),
      ...(typeof opts.workerClaimSeconds === 'number' ? { claimSeconds: opts.workerClaimSeconds } : {}),
    },
  });
  ownUrl = bench.url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//127.0.0.1:');
  const where = typeof opts.databaseUrl === 'string' && opts.databaseUrl !== '' ? `state in ${redactDatabaseUrl(opts.databaseUrl)}, scratch in ${dataDir}` : `data in ${dataDir}`;
  // Without a local worker no backend of this process runs a job: naming one (the --backend default) misled.
  const runs = opts.localWorker === false ? 'jobs on remote workers' : `backend ${String(opts.backend)}`;
  console.log(`hilbench bench service on ${bench.url} (${where}, ${runs})`);
  console.log(`  health: ${bench.url}/api/v1/health   boards: ${bench.url}/api/v1/boards   docs: ${bench.url}/openapi.json   page: ${bench.url}/${mcp ? `   mcp: ${bench.url}/mcp` : ''}`);
  for (const warning of wildcardAddressWarnings(host, { publicUrl: opts.publicUrl, relayPublicUrl: opts.relayPublicUrl, relay: opts.relay !== false })) console.warn(`hilbench: warning: ${warning}`);
  // A relay that cannot start (its data dir held by another server) must not leave the bench running.
  const relay =
    opts.relay === false
      ? undefined
      : await startRelayServer({
          clock,
          logger,
          dataDir: path.join(dataDir, 'relay'),
          // One token for both services' /metrics (decision 1060).
          metricsToken: opts.metricsToken as string | undefined,
          // The relay's tables beside the bench's, in their own schema: replicas share both (decision 0440).
          ...(typeof opts.databaseUrl === 'string' && opts.databaseUrl !== '' ? { databaseUrl: opts.databaseUrl } : {}),
          host,
          port: opts.relayPort as number,
          ...(typeof opts.maxConnections === 'number' ? { maxConnections: opts.maxConnections } : {}),
          ...bodyPaceOf(opts),
          publicOrigin: opts.relayPublicUrl as string | undefined,
          peers: commaList(opts.relayPeers),
          probeIntervalMs: (opts.relayProbeIntervalSeconds as number) * 1000,
          operators: commaList(opts.relayOperators),
          allowPrivatePeers: opts.relayAllowPrivatePeers === true,
          ...(typeof opts.relayPeerOffenceLimit === 'number' ? { peerOffenceLimit: opts.relayPeerOffenceLimit } : {}),
          trustProxyHops: opts.trustProxyHops as number,
          rateLimits: {
            ...(typeof opts.relayRegistrationsPerMinute === 'number' ? { registrationsPerMinute: opts.relayRegistrationsPerMinute } : {}),
            ...(typeof opts.relaySignInsPerMinute === 'number' ? { signInsPerMinute: opts.relaySignInsPerMinute } : {}),
          },
          seeds: commaList(opts.relaySeeds),
          selfSlice: typeof opts.relaySelfSlice === 'string' ? readSelfSlice(opts.relaySelfSlice) : undefined,
          smsSender:
            typeof opts.relaySmsWebhookUrl === 'string'
              ? new WebhookSmsSender({
                  url: opts.relaySmsWebhookUrl,
                  clock,
                  headers: process.env.HILBENCH_RELAY_SMS_WEBHOOK_AUTHORIZATION
                    ? { authorization: process.env.HILBENCH_RELAY_SMS_WEBHOOK_AUTHORIZATION }
                    : undefined,
                })
              : undefined,
        }).catch(async (err: unknown) => {
          await bench.close();
          throw err;
        });
  // Where the relay keeps its tables: beside the bench's in PostgreSQL (shared by replicas), or SQLite in its data dir.
  const relayWhere = typeof opts.databaseUrl === 'string' && opts.databaseUrl !== '' ? `tables in ${redactDatabaseUrl(opts.databaseUrl)}, schema relay` : `data in ${path.join(dataDir, 'relay')}`;
  if (relay) console.log(`hilbench relay service on ${relay.url} (x-relay 0.9.19, ${relayWhere})`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: stopping`);
    await Promise.allSettled([bench.close(), relay?.close()]);
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

/** Reads and validates the relay's own slice file; a bad file stops the start with every problem named. */
function readSelfSlice(file: string): QuorumSet {
  const checked = validateQuorumSet(parseYaml(readFileSync(file, 'utf8')));
  if (!checked.ok) {
    throw new Error(`${file}: not a valid quorum set: ${checked.problems.map((p) => `${p.path.join('.') || '(root)'}: ${coreProblemMessage(p)}`).join('; ')}`);
  }
  return checked.value;
}

/** The request body pace both services take from `--body-stall-seconds` and `--min-body-bytes-per-second` (absent ones left to `listen`'s defaults). */
function bodyPaceOf(opts: Record<string, unknown>): { bodyStallTimeoutMs?: number; minBodyBytesPerSecond?: number } {
  return {
    ...(typeof opts.bodyStallSeconds === 'number' ? { bodyStallTimeoutMs: Math.max(1, Math.round(opts.bodyStallSeconds * 1000)) } : {}),
    ...(typeof opts.minBodyBytesPerSecond === 'number' ? { minBodyBytesPerSecond: opts.minBodyBytesPerSecond } : {}),
  };
}
