import { type Express, type RequestHandler, Router } from 'express';

/**
 * Paths are matched as Starlette matches them: case-sensitively and strictly (`/Items` and
 * `/items/` are not `/items`). Express's defaults ignore case and a trailing slash, so a client
 * that worked against us could break against the FastAPI service it was written for.
 */
const starletteMatching = { caseSensitive: true, strict: true } as const;

/** A router that matches paths like the app (`starletteApp`): case-sensitively and strictly. */
export function strictRouter(): Router {
  return Router(starletteMatching);
}

/** Makes the app's own router match case-sensitively and strictly; call before the first route or `use`. */
export function starletteApp(app: Express): void {
  app.enable('case sensitive routing');
  app.enable('strict routing');
}

/** A path some handler serves, for `redirectSlashes`: `{name}` or `:name` stand for one segment; method `all` for any. */
export interface ServedPath {
  method: string;
  path: string;
}

/**
 * Starlette's `redirect_slashes`: a request that no route matched, whose path with its trailing
 * slashes removed (or with one added) is a served path for its method, is answered 307 with that
 * path (query kept) as `Location`, so the client repeats the same request there. Everything else
 * goes on to the 404. Mount it after every route, just before the not-found handler.
 */
export function redirectSlashes(served: readonly ServedPath[]): RequestHandler {
  const redirectOf = slashRedirects(served);
  return (req, res, next) => {
    const location = redirectOf(req.method, req.originalUrl);
    if (location === undefined) return next();
    res.status(307).location(location).end();
  };
}

/**
 * The `Location` `redirectSlashes(served)` answers a request of `method` to `url` (path and query,
 * as on the request line) with, or undefined when it lets the request through.
 */
export function slashRedirects(served: readonly ServedPath[]): (method: string, url: string) => string | undefined {
  const entries = served.map((s) => ({ method: s.method.toUpperCase(), pattern: pathPattern(s.path) }));
  const serves = (method: string, path: string) =>
    entries.some((e) => (e.method === method || e.method === 'ALL' || (method === 'HEAD' && e.method === 'GET')) && e.pattern.test(path));
  return (method, url) => {
    const [path = '/', query] = splitUrl(url);
    if (path === '/') return undefined;
    const other = path.endsWith('/') ? path.replace(/\/+$/, '') : `${path}/`;
    // "//host" would be a protocol-relative Location (no served path starts so; checked anyway).
    if (other === '' || other.startsWith('//') || !serves(method, other)) return undefined;
    return query === undefined ? other : `${other}?${query}`;
  };
}

function splitUrl(url: string): [string, string | undefined] {
  const at = url.indexOf('?');
  return at < 0 ? [url, undefined] : [url.slice(0, at), url.slice(at + 1)];
}

function pathPattern(path: string): RegExp {
  const source = path
    .split(/(\{[a-z_]+\}|:[a-z_]+)/)
    .map((part, i) => (i % 2 === 1 ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}
