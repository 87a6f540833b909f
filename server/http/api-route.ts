import type { IncomingMessage } from 'node:http';
import type { Request, RequestHandler, Response, Router } from 'express';
import type { z } from 'zod';
import { methodNotAllowed } from './error-handler.js';
import { HttpError } from './http-error.js';

/**
 * One endpoint of either service, described once: the router serves it from this description
 * (`mountApiRoutes`) and `openapi.ts` documents it from the same object, so routes and
 * documentation cannot drift apart. Its `auth` is enforced by the router, through the service's
 * guard, before the handler runs, never by the handler. `Caller` is what the guard resolves to.
 */
export interface ApiRoute<Caller = unknown, Auth extends string = string> {
  method: 'get' | 'post';
  /** OpenAPI-style path, e.g. `/api/v1/sessions/{sid}`. */
  path: string;
  /** Defaults to one derived from the method and path (`getItemsIdBulletin`). */
  operationId?: string;
  summary: string;
  description?: string;
  tags?: string[];
  /** The credential this endpoint needs, in the service's names; absent: none. */
  auth?: Auth;
  /** The first interface version with this endpoint (`x-since` in the OpenAPI document). */
  since?: string;
  /** Query parameters (each optional unless its schema says otherwise). */
  query?: z.ZodType;
  /**
   * The request body: a form (urlencoded or multipart), a multipart upload, JSON, or JSON or a
   * multipart upload. `schema` documents it and is what the handler validates with.
   */
  body?: {
    kind: 'form' | 'multipart' | 'json' | 'json-or-multipart';
    schema: z.ZodType;
    required: boolean;
    /** For `json-or-multipart`: the multipart form's fields (`schema` is the JSON body's). */
    multipart?: z.ZodType;
  };
  /** The success body (JSON unless `produces` says otherwise); absent: documented untyped. */
  response?: z.ZodType;
  /** The content type of a success answer that is not JSON (e.g. `application/octet-stream`). */
  produces?: string;
  /** Status of a success answer; 200 unless said. */
  successStatus?: number;
  /** Other success statuses with the same body (e.g. 200 for "already stored" beside 201), with when. */
  otherSuccess?: Record<number, string>;
  /** A second content type the success answer may have, chosen by `Accept` (documented as binary). */
  alsoProduces?: string;
  /**
   * Error statuses this endpoint can answer, with when. 422 is added for routes that take input.
   * A route that declares none is documented with a `default` error answer.
   */
  errors?: Record<number, string>;
  /** Runs once the router has checked `auth`, with what the service's guard resolved. */
  handler: (req: Request, res: Response, caller: Caller) => Promise<unknown>;
  /**
   * For a request sent with `Expect: 100-continue`: throws the `HttpError` the handler would
   * answer from the headers alone beyond `auth` (which the router checks first), e.g. 413 from
   * `Content-Length`, so the server refuses before writing `100 Continue` and the client never
   * sends the body. Resolves when the body is welcome.
   */
  beforeContinue?: (req: IncomingMessage) => Promise<void>;
}

/**
 * How a service checks a route's `auth`: resolves to the caller, or throws its 401/403
 * `HttpError`. The one place a route's credential is enforced.
 */
export type RouteGuard<Caller, Auth extends string> = (route: ApiRoute<Caller, Auth>, req: IncomingMessage) => Promise<Caller>;

/**
 * Serves `routes` on `router`: for each, the guard, then `beforeHandler` (e.g. a body parser that
 * must not run for a caller the guard refuses), then the handler. Every other method on a served
 * path is a 405 naming the allowed ones (as FastAPI answers); `otherPaths` adds paths served
 * elsewhere (pages, documents) to that rule.
 */
export function mountApiRoutes<Caller, Auth extends string>(
  router: Router,
  routes: readonly ApiRoute<Caller, Auth>[],
  guard: RouteGuard<Caller, Auth>,
  options: { beforeHandler?: RequestHandler; otherPaths?: readonly { method: string; path: string }[] } = {},
): void {
  const methodsByPath = new Map<string, string[]>();
  const allow = (path: string, method: string) => methodsByPath.set(path, [...(methodsByPath.get(path) ?? []), method]);
  for (const route of routes) {
    const path = expressPath(route.path);
    const authorize: RequestHandler = async (req, res, next) => {
      res.locals.caller = await guard(route, req);
      next();
    };
    const handle: RequestHandler = async (req, res) => {
      refuseNulInPath(req.params as Record<string, string>);
      await route.handler(req, res, res.locals.caller as Caller);
    };
    const chain = options.beforeHandler ? [authorize, options.beforeHandler, handle] : [authorize, handle];
    router[route.method](path, ...chain);
    allow(path, route.method);
  }
  for (const other of options.otherPaths ?? []) allow(expressPath(other.path), other.method);
  for (const [path, methods] of methodsByPath) router.all(path, methodNotAllowed(methods));
}

/**
 * A 404 for path parameters holding a NUL: no id or name holds one, and PostgreSQL cannot even
 * compare a text with one (such requests answered 500). Such a path names nothing, like one whose
 * escapes do not decode (error-handler.ts).
 */
export function refuseNulInPath(params: Readonly<Record<string, string>>): void {
  if (Object.values(params).some((value) => value.includes('\u0000'))) throw new HttpError(404, 'Not Found');
}

/** A path parameter as express decoded it; the route table guarantees it, so its absence is a bug. */
export function pathParam(req: Request, name: string): string {
  const value = (req.params as Record<string, unknown>)[name];
  if (typeof value !== 'string') throw new Error(`route is missing its ${name} parameter; the route table and the handler disagree`);
  return value;
}

/** Express path syntax for an OpenAPI path: `{sid}` becomes `:sid`. */
export function expressPath(openApiPath: string): string {
  return openApiPath.replace(/\{([a-z_]+)\}/g, ':$1');
}

/** Names of the `{...}` parameters of an OpenAPI path, in order. */
export function pathParams(openApiPath: string): string[] {
  return [...openApiPath.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]!);
}
