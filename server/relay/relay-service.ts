import type { Express, Request, RequestHandler } from 'express';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock, TimerHandle } from '../../core/clock.js';
import { Credentials } from './domain/credentials.js';
import { Federation, FederationClosedError } from './domain/federation.js';
import { type HostResolver, publicPeerFetch } from './domain/peer-target.js';
import { FileStore } from './domain/file-store.js';
import { identityRoutes } from './routes/identity-routes.js';
import { itemRoutes } from './routes/item-routes.js';
import { networkRoutes } from './routes/network-routes.js';
import { PhoneCodes } from './domain/phone-codes.js';
import type { QuorumSet } from '../../core/relay/quorum-set.js';
import { isNodeId, nodeKeyFromSecret } from '../../core/relay/node-id.js';
import type { RelayDeps } from './relay-deps.js';
import type { SyncFile } from '../storage/wal-sync.js';
import type { ConnectionCounts } from '../http/connection-cap.js';
import { type Logger, consoleLogger } from '../http/logger.js';
import { RateLimiter, clientAddress, rateLimit } from '../http/rate-limit.js';
import { slashRedirects, strictRouter } from '../http/starlette-routing.js';
import { continueListener } from '../http/expect-continue.js';
import { answerWhileStarting, type ListenOptions, listen, listenOptionsOf } from '../http/listen.js';
import { claimDataDir } from '../lifecycle/claim-data-dir.js';
import { ensurePrivateDir } from '../lifecycle/private-files.js';
import { PARTIAL_UPLOAD_PATTERN, removePartialFiles } from '../lifecycle/reap-leftovers.js';
import { defaultRelayRateLimits, type RelayRateLimits } from './relay-rate-limits.js';
export { defaultRelayRateLimits, type RelayRateLimits };
import { registerSchema, relayLimits } from '../../wire/relay/relay-facts.js';
import { type RelayRoute, relayGuard } from './routes/relay-route.js';
import { RelayStore } from './relay-store.js';
import { buildApp, pathPrefix, servedPaths } from './relay-app.js';
import { signDocument } from './domain/signed-document.js';
import { FileOutboxSmsSender, type SmsSender } from './domain/sms-sender.js';
import { searchIndexOf } from '../storage/relay/trigram-prefilter.js';
import { type SignatureChecksAhead, SignatureThread } from './domain/signature-thread.js';
import { sliceDeclarationRoutes } from './routes/slice-declaration-routes.js';
import { socialRoutes } from './routes/social-routes.js';
import { Voting } from './domain/voting.js';
import { type RateLimitName, RelayCounts } from './domain/relay-counts.js';
import { countRefusals, metricsHandler, relayMetrics } from './relay-metrics.js';

export interface RelayServiceConfig {
  clock: Clock;
  /**
   * Holds relay.sqlite, the server HMAC key, the relay node key, stored files and the SMS outbox.
   * With `databaseUrl`, only the SMS outbox and a cache of the files (decision 0440).
   */
  dataDir: string;
  /**
   * Keep the relay's tables, keys and file contents in this PostgreSQL database (schema `relay`)
   * instead of relay.sqlite, so any number of replicas serve the same relay (decision 0440).
   */
  databaseUrl?: string;
  /** With `databaseUrl`: connections of the relay's pool (1 to 100; default 2: its rules run one at a time, decision 0700). */
  databasePoolSize?: number;
  /** API base address as clients reach it, e.g. http://127.0.0.1:8081 or https://relay.example/api. */
  baseUrl: string;
  /** Human site address, e.g. https://relay.example. */
  humanUrl: string;
  /** Where one-time codes go; default: `sms-outbox.jsonl` in the data dir. */
  smsSender?: SmsSender;
  /** Outbound HTTP for federation; default: the global fetch. */
  fetch?: typeof fetch;
  /** Peer relay base URLs to federate with (added to the stored peers at start). */
  peers?: string[];
  /** Seed relays published by GET /seeds. */
  seeds?: string[];
  /**
   * Node ids allowed to add peers and trigger probes (POST /reach, POST /reach/probe): these make
   * the relay fetch URLs someone chose. Absent or empty: nobody may, over HTTP (configured `peers`
   * are still probed).
   */
  operators?: string[];
  /**
   * Let operators add peers whose host is or resolves to a loopback, link-local or private address
   * (tests on loopback; a relay federating inside a private network). Default false: such peers are
   * refused with 403, and stored ones are not probed. Configured `peers` are never checked.
   */
  allowPrivatePeers?: boolean;
  /** Resolves peer host names for that check; default the system resolver (tests inject one). */
  resolveHost?: HostResolver;
  /**
   * The relay node's own slice. Default: its operators plus the relay nodes of its configured peers,
   * 67 % (none when both are empty: the relay then relays and tallies but never accepts); never the
   * nodes that registered here (decision 0402).
   */
  selfSlice?: QuorumSet;
  /** Probe every peer this often (host ms on `clock`); absent or 0: only on POST /reach/probe. */
  probeIntervalMs?: number;
  /** Bound on one outbound federation request (health, an event page). */
  peerRequestTimeoutMs?: number;
  /** Bound on downloading one file from a peer (up to 16 MiB); default 120000. */
  peerFileTimeoutMs?: number;
  /** Event pages (of up to `peerPageEvents` events) one probe reads from one peer; default 20. */
  peerPagesPerProbe?: number;
  /** Events asked for in one page of a peer's feed, 1 to 500 (the default, the most a relay serves); tests read a long feed in small pages. */
  peerPageEvents?: number;
  /**
   * Documents a peer may serve that fail verification (forged signatures, mismatched ids or hashes,
   * unknown authors) before it is suspended until an operator adds it again; default 10.
   */
  peerOffenceLimit?: number;
  /** Bytes of one event page read from a peer before the page is refused; default `PEER_PAGE_MAX_BYTES` (about 210 MB). */
  peerPageMaxBytes?: number;
  /** Where unexpected errors are logged with their cause (the HTTP layer's logger); default stderr. */
  logger?: Logger;
  /** Per-client limits on unauthenticated writes; default `defaultRelayRateLimits`. */
  rateLimits?: Partial<RelayRateLimits>;
  /** Reverse proxies in front whose X-Forwarded-For is trusted for those limits; default 0 (the connected address). */
  trustProxyHops?: number;
  /** Payload bytes after which a GET /events page ends before its `limit`; default `relayLimits.eventsPagePayloadMaxBytes` (4 MiB; tests set less). */
  eventsPagePayloadMaxBytes?: number;
  /** SQLite only: how the WAL is made durable before answers go out; default fdatasync on the thread pool (decision 0480; tests gate it). */
  syncFile?: SyncFile;
  /** When set, `GET /metrics` answers only `authorization: Bearer <metricsToken>`; unset: open (as the bench's; decision 1060). */
  metricsToken?: string;
  /** The connection cap's live counts of the server this relay answers on (`listen`'s), in `/metrics`; absent when it is not listening (tests). */
  connections?: ConnectionCounts;
  /**
   * SQLite only: where a lone vote's signature is checked while the loop stores the vote, which
   * commits only if it passes (decision 1090); default a `SignatureThread` of the relay's own.
   * Closed with the relay, the default or one passed here alike (a `close` that runs twice is
   * harmless). Null: checked first, on the loop (the ingest bench compares both).
   */
  signatureChecksAhead?: SignatureChecksAhead | null;
}

export interface RelayService {
  /** The express app; it never listens by itself. */
  app: Express;
  /** The relay node's id (its Ed25519 public key, hex). */
  nodeId: string;
  /** The route table (what /openapi.json, the site and the docs are built from). */
  routes: readonly RelayRoute[];
  federation: Federation;
  /**
   * The HTTP server's `checkContinue` listener (`server.on('checkContinue', ...)`, done by
   * `startRelayServer`): a request sent with `Expect: 100-continue` that its credential, its
   * declared type or size, or a missing `Host` would have refused is refused before `100 Continue`,
   * so its body is never sent.
   */
  checkContinue(req: IncomingMessage, res: ServerResponse): void;
  /** Write transactions this process committed since the relay started (`RelayStore.commits`), for the ingest bench. */
  commitCount(): number;
  /** Stops periodic probes and closes the database. */
  close(): Promise<void>;
}

/** Builds the relay: opens (or creates) its data dir, keys and database, and the express app. */
export async function createRelayService(config: RelayServiceConfig): Promise<RelayService> {
  const baseUrl = config.baseUrl.replace(/\/+$/, '');
  const humanUrl = config.humanUrl.replace(/\/+$/, '');
  const logger = config.logger ?? consoleLogger;
  const log = (message: string, cause: unknown) => logger.error(message, cause);
  // Checked before anything is opened: a typo here would silently leave the relay without operators.
  for (const operator of config.operators ?? []) {
    if (!isNodeId(operator)) throw new TypeError(`relay operators must be node ids (64 lowercase hex characters); got ${JSON.stringify(operator)}`);
  }
  // Peers added over HTTP are connected to on public addresses only, checked on the address connected
  // to (decision 0231); configured peers and allowPrivatePeers are trusted as the address check trusts them.
  const configuredPeers = (config.peers ?? []).map((peer) => Federation.normalizeUrl(peer, ['peers']));
  const peerFetch = publicPeerFetch({
    trusted: (url) => config.allowPrivatePeers === true || configuredPeers.some((peer) => url === peer || url.startsWith(`${peer}/`)),
    ...(config.resolveHost ? { resolveHost: config.resolveHost } : {}),
  });
  // Ours alone and owner-only from here on (decisions 0221, 0222); then what a crash left: uploads
  // it was receiving stay as `files/tmp-*` and are nobody's now.
  const lock = claimDataDir(config.dataDir, { service: 'relay service', logger });
  let store: RelayStore;
  try {
    removePartialFiles(join(config.dataDir, 'files'), PARTIAL_UPLOAD_PATTERN);
    ensurePrivateDir(join(config.dataDir, 'files'));
    store = config.databaseUrl ? await RelayStore.openPostgres(config.databaseUrl, config.databasePoolSize !== undefined ? { poolSize: config.databasePoolSize } : {}) : new RelayStore(config.dataDir, undefined, config.syncFile ? { wal: { syncFile: config.syncFile } } : {});
  } catch (err) {
    lock.release();
    throw err;
  }
  try {
    // Said at start, once: where pg_trgm could not be installed, every search reads every row (decision 0506).
    if ((await store.plain(searchIndexOf(store.sql))) === 'scan') logger.warn('relay: GET /search scans every title, name and about: the PostgreSQL extension pg_trgm is not installed in this database (docs/deployment.md says how to add it and its indexes)');
    const serverKey = await store.loadOrCreateSecret('relay-server.key');
    const selfKey = nodeKeyFromSecret(new Uint8Array(await store.loadOrCreateSecret('relay-node.key')));
    const files = new FileStore(config.dataDir, store.sharedFiles);
    // Without a configured slice, the relay trusts only its operator's word (decision 0402).
    const defaultSliceFrom = { operators: config.operators ?? [], configuredPeers };
    const voting = new Voting({ store, clock: config.clock, selfKey, defaultSliceFrom, ...(config.selfSlice ? { selfSlice: config.selfSlice } : {}) });
    const federation = new Federation({
      store,
      clock: config.clock,
      files,
      voting,
      baseUrl,
      selfNodeId: selfKey.nodeId,
      fetch: config.fetch ?? peerFetch.fetch,
      ...(config.peerRequestTimeoutMs !== undefined ? { requestTimeoutMs: config.peerRequestTimeoutMs } : {}),
      ...(config.peerFileTimeoutMs !== undefined ? { fileTimeoutMs: config.peerFileTimeoutMs } : {}),
      ...(config.peerPagesPerProbe !== undefined ? { maxPagesPerProbe: config.peerPagesPerProbe } : {}),
      ...(config.peerPageEvents !== undefined ? { pageEvents: config.peerPageEvents } : {}),
      allowPrivatePeers: config.allowPrivatePeers === true,
      ...(config.resolveHost ? { resolveHost: config.resolveHost } : {}),
      ...(config.peerOffenceLimit !== undefined ? { offenceLimit: config.peerOffenceLimit } : {}),
      ...(config.peerPageMaxBytes !== undefined ? { pageMaxBytes: config.peerPageMaxBytes } : {}),
      log,
      warn: (message) => logger.warn(message),
    });
    const deps: RelayDeps = {
      store,
      clock: config.clock,
      credentials: new Credentials(store, serverKey),
      codes: new PhoneCodes(store, config.clock, serverKey, config.smsSender ?? new FileOutboxSmsSender(config.dataDir, config.clock), log),
      files,
      voting,
      federation,
      selfKey,
      baseUrl,
      humanUrl,
      seeds: config.seeds ?? [],
      operators: new Set(config.operators ?? []),
      log,
      counts: new RelayCounts(),
      eventsPagePayloadMaxBytes: config.eventsPagePayloadMaxBytes ?? relayLimits.eventsPagePayloadMaxBytes,
      // On PostgreSQL a transaction awaits each statement: the thread pool's checks already overlap there.
      signatureChecksAhead:
        store.dialect !== 'sqlite'
          ? null
          : config.signatureChecksAhead !== undefined
            ? config.signatureChecksAhead
            : new SignatureThread({ onLost: (cause) => logger.warn(`relay: the signature thread ended; lone votes are checked on the event loop from now on (${cause instanceof Error ? cause.message : String(cause)})`) }),
    };
    await registerSelf(deps);
    await store.tx(voting.publishSelfSlice(config.clock.nowMs()));
    for (const peer of config.peers ?? []) await federation.addConfiguredPeer(peer);

    const routes = [...networkRoutes(deps), ...identityRoutes(deps), ...itemRoutes(deps), ...sliceDeclarationRoutes(deps), ...socialRoutes(deps)];
    const rates = { ...defaultRelayRateLimits, ...config.rateLimits };
    const clientOf = (req: Request) => clientAddress(req, config.trustProxyHops ?? 0);
    const limited = strictRouter();
    const counted = (limit: RateLimitName, handler: RequestHandler) => countRefusals(deps.counts, limit, handler);
    limited.post('/register', counted('registrations', rateLimit({ limiter: new RateLimiter({ clock: config.clock, requests: rates.registrationsPerMinute, perMs: 60_000 }), clientOf, what: 'registrations' })));
    limited.post(['/session', '/login', '/login/verify', '/recover/start', '/recover/finish'], counted('sign_ins', rateLimit({ limiter: new RateLimiter({ clock: config.clock, requests: rates.signInsPerMinute, perMs: 60_000 }), clientOf, what: 'sign-in and recovery requests' })));
    // One list for the app's 307s and the `Expect: 100-continue` listener's, which must agree.
    const served = servedPaths(deps, routes);
    const metrics = relayMetrics({ store, counts: deps.counts, ...(config.connections ? { connections: config.connections } : {}) });
    const app = buildApp(deps, routes, logger, limited, served, { onRequestDone: metrics.onRequestDone, scrape: metricsHandler({ registry: metrics.registry, store, token: config.metricsToken }) });

    let timer: TimerHandle | undefined;
    let closed = false;
    const schedule = () => {
      if (!config.probeIntervalMs || closed) return;
      timer = config.clock.setTimeout(() => {
        federation
          .probeAll()
          // A sweep cut short by `close` is no failure worth a log line.
          .catch((cause: unknown) => {
            if (!(cause instanceof FederationClosedError)) log('relay: periodic probe failed', cause);
          })
          .finally(schedule);
      }, config.probeIntervalMs);
    };
    schedule();

    // The routes as the server sees them: under the API's path.
    const apiPrefix = pathPrefix(baseUrl);
    const checkContinue = continueListener(routes.map((r) => ({ ...r, path: apiPrefix + r.path })), relayGuard(deps.credentials), app, slashRedirects(served));

    return {
      app,
      checkContinue,
      nodeId: selfKey.nodeId,
      routes,
      federation,
      commitCount: () => store.commits,
      close: async () => {
        closed = true;
        if (timer !== undefined) config.clock.clearTimeout(timer);
        await federation.close();
        await peerFetch.close();
        await deps.signatureChecksAhead?.close();
        await store.close();
        lock.release();
      },
    };
  } catch (err) {
    void peerFetch.close();
    await store.close();
    lock.release();
    throw err;
  }
}

/** The relay node appears in its own feed once, with a self-signed registration, so peers can verify its statements. */
async function registerSelf(deps: RelayDeps): Promise<void> {
  const { store, selfKey } = deps;
  if (await store.plainData.nodes.exists(selfKey.nodeId)) return;
  const nowMs = deps.clock.nowMs();
  const registration = signDocument({ schema: registerSchema, node_id: selfKey.nodeId, relay: deps.baseUrl, created_at: Math.floor(nowMs / 1000), name: 'relay node' }, selfKey.secretKey);
  const { nodes } = store.data;
  await store.tx(function* () {
    // Checked again under the write lock: replicas starting together register the relay node once.
    if (yield* nodes.exists(selfKey.nodeId)) return;
    yield* nodes.insert({ nodeId: selfKey.nodeId, local: false, name: 'relay node', registration: JSON.stringify(registration), nowMs });
    yield* store.appendEvent('node', selfKey.nodeId, selfKey.nodeId, { registration }, nowMs);
  });
}

export interface StartRelayServerOptions extends Omit<RelayServiceConfig, 'baseUrl' | 'humanUrl' | 'connections'>, Pick<ListenOptions, 'maxConnections' | 'headersTimeoutMs' | 'sendStallTimeoutMs' | 'bodyStallTimeoutMs' | 'minBodyBytesPerSecond'> {
  /** Interface to listen on; default 127.0.0.1. */
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Path of the API under the origin, e.g. "/api"; default "" (API at the root). */
  basePath?: string;
  /** Path of the human site under the origin; default "" (site at the root). */
  humanPath?: string;
  /** The origin clients use when it differs from the listening address (behind a proxy). */
  publicOrigin?: string;
}

export interface RunningRelay {
  /** The origin it listens on, e.g. http://127.0.0.1:41234. */
  url: string;
  baseUrl: string;
  humanUrl: string;
  service: RelayService;
  close(): Promise<void>;
}

/** What `startRelayServer` builds the relay with; tests put a step of their own around it. */
export interface StartRelayServerDeps {
  createService?: (config: RelayServiceConfig) => Promise<RelayService>;
}

/**
 * Listens (port 0 by default), then builds the relay with the base and human addresses it now
 * knows; requests that arrive meanwhile are answered 503 (docs/relay-api.md).
 */
export async function startRelayServer(options: StartRelayServerOptions, deps: StartRelayServerDeps = {}): Promise<RunningRelay> {
  // Listens first: the service's own URLs (signed into its documents) need the bound port.
  const listening = await listen({ port: options.port ?? 0, ...listenOptionsOf(options) });
  const starting = answerWhileStarting(listening.server, 'the relay is starting');
  const origin = (options.publicOrigin ?? listening.origin).replace(/\/+$/, '');
  const baseUrl = origin + (options.basePath ?? '');
  const humanUrl = origin + (options.humanPath ?? '');
  let service: RelayService;
  try {
    service = await (deps.createService ?? createRelayService)({ ...options, baseUrl, humanUrl, connections: listening.connections });
  } catch (err) {
    await listening.close();
    throw err;
  }
  starting.serve(service);
  return {
    url: origin,
    baseUrl,
    humanUrl,
    service,
    close: async () => {
      await listening.close();
      await service.close();
    },
  };
}
