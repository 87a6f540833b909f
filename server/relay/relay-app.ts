import express, { type Express, type RequestHandler, type Router } from 'express';
import { mountApiRoutes } from '../http/api-route.js';
import { notFoundHandler } from '../http/error-handler.js';
import { type RequestDone, requestMetrics } from '../http/http-metrics.js';
import type { Logger } from '../http/logger.js';
import { requireHost } from '../http/malformed-request.js';
import { buildOpenApiDocument } from '../http/openapi.js';
import { noSniff } from '../http/security-headers.js';
import { type ServedPath, redirectSlashes, starletteApp, strictRouter } from '../http/starlette-routing.js';
import { relayVersion } from '../../wire/relay/relay-facts.js';
import type { RelayDeps } from './relay-deps.js';
import { relayStoreGates } from './relay-store-gates.js';
import { relayBodyParser } from './routes/relay-body-parser.js';
import { relayErrorHandler } from './routes/relay-error.js';
import { type RelayRoute, inMatchOrder, relayGuard, relayOpenApiSecurity } from './routes/relay-route.js';
import { RELAY_SITE_PATHS, relaySite } from './routes/relay-site.js';

/** The path of `url` without its trailing slashes: where the site or the API is mounted ("" for the root). */
export function pathPrefix(url: string): string {
  return new URL(url).pathname.replace(/\/+$/, '');
}

/** Every path the relay's app serves, as the server sees it (site and API prefixes), for the slash redirects. */
export function servedPaths(deps: RelayDeps, routes: readonly RelayRoute[]): ServedPath[] {
  const sitePrefix = pathPrefix(deps.humanUrl);
  const apiPrefix = pathPrefix(deps.baseUrl);
  return [
    { method: 'get', path: '/metrics' },
    ...RELAY_SITE_PATHS.map((path) => ({ method: 'get', path: sitePrefix + path })),
    ...[...routes, { method: 'get', path: '/openapi.json' }].map((route) => ({ method: route.method, path: apiPrefix + route.path })),
  ];
}

/**
 * The relay's express app, in the order its layers must run (the composition root's other half:
 * `relay-service.ts` builds what it serves): security headers and the host check, metrics and
 * `/metrics`, the disk gate, rate limits, the cache refresh, the site and the API, slash
 * redirects, the error handler.
 */
export function buildApp(deps: RelayDeps, routes: readonly RelayRoute[], logger: Logger, rateLimits: Router, served: readonly ServedPath[], metrics: { onRequestDone: (done: RequestDone) => void; scrape: RequestHandler }): Express {
  const app = express();
  starletteApp(app);
  app.disable('x-powered-by');
  app.use(noSniff);
  app.use(requireHost);
  // HTTP metrics by route pattern and status: the bench's requestContext without its request id (x-relay defines the relay's answers).
  app.use(requestMetrics({ nowMs: () => deps.clock.nowMs(), onDone: metrics.onRequestDone }));
  // Before the durable gate: after a failed sync every other answer is a 503, and the scrape is how
  // an operator sees it (hilbench_relay_wal_sync_failed). At the origin's root whatever the API's
  // path, as the bench's; not in /openapi.json, which describes x-relay (decision 1060).
  app.get('/metrics', metrics.scrape);
  const api = strictRouter();
  const gates = relayStoreGates(deps.store, logger);
  // No answer before its data is on disk.
  app.use(gates.durable);
  // Before the routes: a client over its limit costs no credential check, no body parse and no look at the store.
  api.use(rateLimits);
  // Nor from caches another replica made stale.
  api.use(gates.fresh);

  const openapi = buildOpenApiDocument(routes, {
    title: 'x-relay',
    version: relayVersion,
    description: 'Relay and voting service (scp-s5). Errors: {"detail": "..."}; 422: {"detail": [{type, loc, msg, input, ctx}]}.',
    serverUrl: deps.baseUrl,
    security: relayOpenApiSecurity,
  });
  api.get('/openapi.json', (_req, res) => {
    res.json(openapi);
  });
  // Credentials are checked before any body is read: a wrong caller never costs a parse or an upload.
  mountApiRoutes(api, inMatchOrder(routes, ['POST /items/{id}/vote']), relayGuard(deps.credentials), { beforeHandler: relayBodyParser(), otherPaths: [{ method: 'get', path: '/openapi.json' }] });

  // Every page shows them: kept counts, never a walk of the tables (decision 1100).
  const stats = async () => {
    const { nodes, items, votes, peers } = await deps.store.plainData.counts.totals();
    return { nodes, items, votes, peers };
  };
  const sitePrefix = pathPrefix(deps.humanUrl);
  const apiPrefix = pathPrefix(deps.baseUrl);
  // The site first: with both at "/", "/" and "/agents" are pages, every other path is the API.
  app.use(sitePrefix || '/', relaySite(routes, deps.baseUrl, deps.humanUrl, stats));
  app.use(apiPrefix || '/', api);
  app.use(redirectSlashes(served));
  app.use(notFoundHandler);
  app.use(relayErrorHandler(logger));
  return app;
}

