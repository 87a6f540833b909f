import type { IncomingMessage } from 'node:http';
import type { Request, Response } from 'express';
import type { z } from 'zod';

/**
 * `bearer`: `authorization: Bearer <agent token>`; `admin`: `x-admin-token`; `worker`:
 * `authorization: Bearer <worker token>` (a bench worker, never an agent).
 */
export type RouteAuth = 'bearer' | 'admin' | 'worker';

/**
 * One endpoint, described once: express serves it from this description and `openapi.ts`
 * documents it from the same object, so routes and documentation cannot drift apart. Its `auth`
 * is enforced by the router (`serveApiRoute`) before the handler runs, never by the handler.
 * `Agent` is what a service's bearer check resolves to.
 */
export interface ApiRoute<Agent = unknown> {
  method: 'get' | 'post';
  /** OpenAPI-style path, e.g. `/api/v1/sessions/{sid}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  auth?: RouteAuth;
  /** Query parameters (each optional unless its schema says otherwise), parsed by the handler with this schema. */
  query?: z.ZodObject;
  /** The request body: a form (urlencoded or multipart), a multipart upload, or JSON. */
  body?: { kind: 'form' | 'multipart' | 'json'; schema: z.ZodObject; required: boolean };
  /** The 200 response body (JSON unless `produces` says otherwise). */
  response: z.ZodType;
  /** The content type of a 200 answer that is not JSON (e.g. `application/octet-stream`). */
  produces?: string;
  /** Error statuses this endpoint can answer, with when. 422 is added for routes with a body. */
  errors: Record<number, string>;
  /** Runs once the router has checked `auth`; `caller.agent` is the bearer token's agent on `bearer` routes. */
  handler: (req: Request, res: Response, caller: RouteCaller<Agent>) => Promise<unknown>;
  /**
   * For a request sent with `Expect: 100-continue`: throws the `HttpError` the handler would
   * answer from the headers alone beyond `auth` (which the router checks first), e.g. 413 from
   * `Content-Length`, so the server refuses before writing `100 Continue` and the client never
   * sends the body. Resolves when the body is welcome.
   */
  beforeContinue?: (req: IncomingMessage) => Promise<void>;
}

/** Who the router let through: the agent on `bearer` routes, the worker on `worker` routes, none elsewhere. */
export interface RouteCaller<Agent> {
  agent: Agent | undefined;
  /** The worker of a `worker` route (what the service's `worker` guard resolved). */
  worker?: unknown;
}

/** How a service checks each kind of `auth`: resolves (with the agent) or throws its 401/403 `HttpError`. */
export interface RouteGuards<Agent> {
  bearer(req: IncomingMessage): Promise<Agent>;
  admin(req: IncomingMessage): void;
  /** A service with `worker` routes checks worker tokens here. */
  worker?(req: IncomingMessage): Promise<unknown>;
}

/** Checks `route.auth` with the service's guards: the one place a route's credential is enforced. */
export async function authorize<Agent>(route: ApiRoute<Agent>, guards: RouteGuards<Agent>, req: IncomingMessage): Promise<RouteCaller<Agent>> {
  if (route.auth === 'bearer') return { agent: await guards.bearer(req) };
  if (route.auth === 'admin') guards.admin(req);
  if (route.auth === 'worker') {
    if (!guards.worker) throw new Error(`route ${route.path} needs worker auth, which this service does not check`);
    return { agent: undefined, worker: await guards.worker(req) };
  }
  return { agent: undefined };
}

/** The express handler of `route`: `auth` first, then the route's handler. */
export function serveApiRoute<Agent>(route: ApiRoute<Agent>, guards: RouteGuards<Agent>): (req: Request, res: Response) => Promise<void> {
  return async (req, res) => {
    const caller = await authorize(route, guards, req);
    await route.handler(req, res, caller);
  };
}

/**
 * The `Expect: 100-continue` check of `route`, or undefined when it has none to make: `auth`
 * first, then the route's own `beforeContinue` (the order its handler checks in).
 */
export function continueCheck<Agent>(route: ApiRoute<Agent>, guards: RouteGuards<Agent>): ((req: IncomingMessage) => Promise<void>) | undefined {
  const own = route.beforeContinue;
  if (!own) return undefined;
  return async (req) => {
    await authorize(route, guards, req);
    await own(req);
  };
}

/** Express path syntax for an OpenAPI path: `{sid}` becomes `:sid`. */
export function expressPath(openApiPath: string): string {
  return openApiPath.replace(/\{([a-z_]+)\}/g, ':$1');
}

/** Names of the `{...}` parameters of an OpenAPI path, in order. */
export function pathParams(openApiPath: string): string[] {
  return [...openApiPath.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]!);
}
