import type { IncomingMessage } from 'node:http';
import type { ApiRoute, RouteGuard } from '../../http/api-route.js';
import type { OpenApiSecurity } from '../../http/openapi.js';
import type { AgentRecord } from '../../storage/bench/bench-store.js';

/**
 * The bench service's credentials. `bearer`: `authorization: Bearer <agent token>`; `admin`:
 * `x-admin-token`; `worker`: `authorization: Bearer <worker token>` (a bench worker, never an agent).
 * The relay names its own (`CredentialKind`); a route is generic over the service's names.
 */
export type RouteAuth = 'bearer' | 'admin' | 'worker';

/** A bench endpoint: its caller is what `benchGuard` resolved. */
export type BenchRoute = ApiRoute<RouteCaller<AgentRecord>, RouteAuth>;

/** Who the bench's router let through: the agent on `bearer` routes, the worker on `worker` routes, none elsewhere. */
export interface RouteCaller<Agent> {
  agent: Agent | undefined;
  /** The worker of a `worker` route (what the service's `worker` guard resolved). */
  worker?: unknown;
}

/** How the bench checks each kind of `auth`: resolves (with the agent) or throws its 401/403 `HttpError`. */
export interface RouteGuards<Agent> {
  bearer(req: IncomingMessage): Promise<Agent>;
  admin(req: IncomingMessage): void;
  /** A service with `worker` routes checks worker tokens here. */
  worker?(req: IncomingMessage): Promise<unknown>;
}

/** The bench's guard, from its checks of each kind of credential. */
export function benchGuard<Agent>(guards: RouteGuards<Agent>): RouteGuard<RouteCaller<Agent>, RouteAuth> {
  return async (route, req) => {
    if (route.auth === 'bearer') return { agent: await guards.bearer(req) };
    if (route.auth === 'admin') guards.admin(req);
    if (route.auth === 'worker') {
      if (!guards.worker) throw new Error(`route ${route.path} needs worker auth, which this service does not check`);
      return { agent: undefined, worker: await guards.worker(req) };
    }
    return { agent: undefined };
  };
}

/** The agent a `bearer` route's guard resolved; its absence means the route table and the handler disagree. */
export function callerAgent<Agent>(caller: RouteCaller<Agent>): Agent {
  if (!caller.agent) throw new Error('a handler asked for the agent on a route without bearer auth; the route table and the handler disagree');
  return caller.agent;
}


/** The bench's credentials in its OpenAPI document. */
export const benchOpenApiSecurity: OpenApiSecurity<RouteAuth> = {
  schemes: {
    HTTPBearer: { type: 'http', scheme: 'bearer', description: 'An agent token from POST /api/v1/agents/register: `authorization: Bearer hb_...`.' },
    AdminToken: { type: 'apiKey', in: 'header', name: 'x-admin-token', description: 'The administrator token the server was started with.' },
    WorkerToken: { type: 'http', scheme: 'bearer', description: 'A bench worker token from POST /admin/workers: `authorization: Bearer hbw_...` (docs/worker-protocol.md).' },
  },
  // The spec marks both headers optional in the schema; a missing one is a 401, not a 422.
  of: (auth) => {
    if (auth === 'bearer') return { security: [{ HTTPBearer: [] }], headers: [{ name: 'authorization', title: 'Authorization' }] };
    if (auth === 'admin') return { security: [{ AdminToken: [] }], headers: [{ name: 'x-admin-token', title: 'X-Admin-Token' }] };
    if (auth === 'worker') return { security: [{ WorkerToken: [] }] };
    return {};
  },
};
