import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import express from 'express';
import type { Clock } from '../../core/clock.js';
import { mountApiRoutes } from '../http/api-route.js';
import { continueListener } from '../http/expect-continue.js';
import { createErrorHandler, notFoundHandler } from '../http/error-handler.js';
import { HttpError } from '../http/http-error.js';
import { bearerToken, sameSecret } from '../http/same-secret.js';
import type { Logger } from '../http/logger.js';
import { buildOpenApiDocument } from '../http/openapi.js';
import { RateLimiter, clientAddress, rateLimit } from '../http/rate-limit.js';
import { requireHost } from '../http/malformed-request.js';
import { noSniff } from '../http/security-headers.js';
import { redirectSlashes, slashRedirects, starletteApp, strictRouter } from '../http/starlette-routing.js';
import { connectionMetrics } from '../http/connection-metrics.js';
import { httpMetrics } from '../http/http-metrics.js';
import { requestContext } from '../http/request-context.js';
import { upgradeListener } from '../http/ignored-upgrade.js';
import type { DiskSpace } from '../storage/disk-space.js';
import type { BenchStore } from '../storage/bench/bench-store.js';
import { type Bench, BENCH_API_VERSION } from './domain/bench.js';
import type { BenchLimits } from './domain/bench-limits.js';
import type { JobLive } from './domain/job-live.js';
import { exampleFirmwareOf } from './domain/example-firmware.js';
import type { benchWorkers } from './workers/bench-workers.js';
import { benchGuards, benchRoutes } from './routes/bench-routes.js';
import { benchGuard, benchOpenApiSecurity } from './routes/bench-route.js';
import { mapBenchErrors } from './routes/bench-error-http.js';
import { mcpOpenApiPath } from './routes/mcp-openapi.js';
import { workerRoutes } from './routes/worker-routes.js';
import { debugRoutes } from './routes/debug-routes.js';
import { debugUpgrades } from './routes/debug-upgrades.js';
import { consoleOpenApiPaths, pagesOpenApiPaths } from './pages/pages-openapi.js';
import { CONSOLE_ROUTES, createConsoleRouter } from './pages/console-router.js';
import { createPagesRouter, PAGES_ROUTES } from './pages/pages-router.js';
import { benchSnapshot } from './views/bench-snapshot.js';
import { benchMetrics, metricsOpenApiPath } from './bench-metrics.js';
import type { BenchServiceConfig } from './bench-service.js';
import { openApiComponents } from '../../wire/bench/bench-schemas.js';
import { workerOpenApiComponents } from '../../wire/worker/worker-schemas.js';
import { boardQueueSchema, jobTextSchema, uartInputAnswerSchema, uartTextSchema } from '../../wire/bench/job-answer-schemas.js';

/** What the bench's HTTP edge is built on: the started `Bench`, its workers' side, the store and the service's config. */
export interface BenchAppDeps {
  config: BenchServiceConfig;
  clock: Clock;
  logger: Logger;
  limits: BenchLimits;
  bench: Bench;
  store: BenchStore;
  live: JobLive;
  /** The disk under the data directory, registered with the metrics. */
  disk: DiskSpace;
  workers: Pick<ReturnType<typeof benchWorkers>, 'timings' | 'workerAdmin' | 'gateway' | 'protocol'>;
}

/**
 * The bench service's HTTP edge over a started `Bench` (the composition root's second half, after
 * `createBenchService` opened the storage and started the domain and the workers): the express app
 * with its routes, guards, rate limits, pages, console, metrics and MCP, the OpenAPI document built
 * from the same route objects, and the server's `upgrade` and `checkContinue` listeners. Never listens.
 */
export async function buildBenchApp(deps: BenchAppDeps) {
  const { config, clock, logger, limits, bench, store, live, disk } = deps;
  const { timings, workerAdmin, gateway, protocol } = deps.workers;
  const { waitlist } = store;
  const routes = [...benchRoutes(bench, { limits }), ...workerRoutes({ protocol, admin: workerAdmin, timings }), ...debugRoutes(bench, gateway.debug)];
  const agentGuards = benchGuards(bench, { adminToken: config.adminToken });
  const guard = benchGuard({
    ...agentGuards,
    worker: mapBenchErrors((req: IncomingMessage) => workerAdmin.authenticate(req.headers.authorization)),
  });
  const openApi = buildOpenApiDocument(routes, {
    title: 'hilbench bench service',
    version: BENCH_API_VERSION,
    description: 'Flash ELF firmware on remote microcontroller benches (mock, simulated, emulated or real) and read the UART. See docs/bench-api.md.',
    serverUrl: config.publicBaseUrl,
    components: { ...openApiComponents, ...workerOpenApiComponents, UartInputWritten: uartInputAnswerSchema, JobText: jobTextSchema, UartText: uartTextSchema, BoardQueue: boardQueueSchema },
    extraPaths: { ...pagesOpenApiPaths(), ...consoleOpenApiPaths(), ...metricsOpenApiPath, ...(config.mcp ? mcpOpenApiPath : {}) },
    security: benchOpenApiSecurity,
  });

  const app = express();
  starletteApp(app);
  app.disable('x-powered-by');
  app.use(noSniff);
  app.use(requireHost);
  // A request id for every answer and log line, and HTTP metrics by route pattern and status.
  const metrics = benchMetrics({ clock, store, live, logger, workerOfflineAfterMs: timings.offlineAfterSeconds * 1000 });
  disk.register(metrics.registry);
  if (config.connections) connectionMetrics(metrics.registry, config.connections);
  app.use(requestContext({ logger, nowMs: () => clock.nowMs(), onDone: httpMetrics(metrics.registry) }));
  // One log line per job transition this replica sees (docs/deployment.md, "Logs").
  live.subscribeAll((jobId, event) => {
    if (event.kind === 'state') logger.info(`job ${jobId} ${event.state}`, { jobId, state: event.state });
  });
  // Unauthenticated writes, limited per client address before anything is read (decision 0232).
  const clientOf = (req: IncomingMessage) => clientAddress(req, config.trustProxyHops ?? 0);
  const perMinute = (requests: number) => new RateLimiter({ clock, requests, perMs: 60_000 });
  const limited = strictRouter();
  limited.post('/api/v1/agents/register', rateLimit({ limiter: perMinute(limits.agentRegistrationsPerMinute), clientOf, what: 'agent registrations' }));
  limited.post('/api/v1/waitlist', rateLimit({ limiter: perMinute(limits.waitlistJoinsPerMinute), clientOf, what: 'waitlist sign-ups', htmlForBrowsers: true }));
  // A router of its own, so the app's route table (what /openapi.json is checked against) stays the routes served.
  app.use(limited);
  app.use(
    createPagesRouter({
      clock,
      publicBaseUrl: config.publicBaseUrl,
      snapshot: async () => benchSnapshot(await bench.overview()),
      waitlist,
      csrfSecret: await store.secret('waitlist-csrf', () => new Uint8Array(randomBytes(32))),
      contactEmail: config.pages?.contactEmail,
      waitlistOpen: config.pages?.waitlist !== false,
      exampleFirmware: exampleFirmwareOf(config.boards.map((b) => b.id)),
      mcp: config.mcp !== undefined,
      logError: (message, cause) => logger.error(message, cause),
    }),
  );
  app.get('/metrics', async (req, res) => {
    // Open by default (board ids, worker labels and counts); with a metrics token, a bearer scrape,
    // compared in constant time like the admin token (a plain comparison leaked it by timing).
    const token = bearerToken(req.get('authorization'));
    if (config.metricsToken && (token === undefined || !sameSecret(token, config.metricsToken))) {
      throw new HttpError(401, 'metrics token required: send "authorization: Bearer <metrics token>"', { 'WWW-Authenticate': 'Bearer' });
    }
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  app.get('/openapi.json', (_req, res) => {
    res.json(openApi);
  });
  app.use(
    createConsoleRouter({
      clock,
      bench,
      adminToken: config.adminToken,
      secret: await store.secret('console', () => new Uint8Array(randomBytes(32))),
      secureCookies: config.publicBaseUrl.startsWith('https:'),
      waitlistOpen: config.pages?.waitlist !== false,
    }),
  );
  const mcp = config.mcp;
  // The agent's token is checked here, as on every bearer route: a wrong one is a 401 at the door
  // rather than an MCP conversation whose every tool then fails with the API's 401.
  if (mcp) {
    app.all('/mcp', async (req, res) => {
      if (req.method === 'POST') await agentGuards.bearer(req);
      await mcp(req, res);
    });
  }
  const otherPaths = [{ method: 'get', path: '/metrics' }, { method: 'get', path: '/openapi.json' }, ...PAGES_ROUTES, ...CONSOLE_ROUTES];
  mountApiRoutes(app, routes, guard, { otherPaths });
  const served = [...routes, ...otherPaths, ...(mcp ? [{ method: 'all', path: '/mcp' }] : [])];
  app.use(redirectSlashes(served));
  app.use(notFoundHandler);
  app.use(createErrorHandler(logger, { service: 'bench' }));

  const upgrades = upgradeListener(debugUpgrades({ relay: gateway.debug, clock, logger, authenticateAgent: (h) => bench.authenticate(h), authenticateWorker: (h) => workerAdmin.authenticate(h), renewSession: (a, s) => bench.heartbeat(a, s) }), app, { clock });
  const checkContinue = continueListener(routes, guard, app, slashRedirects(served), new Set(['GET', 'HEAD', 'OPTIONS']));
  return { app, openApi, upgrades, checkContinue, stopMetrics: metrics.stop };
}
