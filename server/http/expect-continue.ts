import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApiRoute, RouteGuard } from './api-route.js';
import { HttpError } from './http-error.js';
import { lacksOneHost } from './malformed-request.js';

/**
 * The `Expect: 100-continue` check of `route`, or undefined when it has none to make: `auth`
 * first, then the route's own `beforeContinue` (the order its handler checks in).
 */
export function continueCheck<Caller, Auth extends string>(route: ApiRoute<Caller, Auth>, guard: RouteGuard<Caller, Auth>): ((req: IncomingMessage) => Promise<void>) | undefined {
  const own = route.beforeContinue;
  if (!own) return undefined;
  return async (req) => {
    await guard(route, req);
    await own(req);
  };
}

/**
 * The HTTP server's `checkContinue` listener for `routes` served by `app`: a request sent with
 * `Expect: 100-continue` is refused from its headers (401, 413, with the normal bodies and
 * `Connection: close`) before `100 Continue` is written, and one without `Host` goes to the app
 * unasked (its 400), as does one `slashRedirect` names a `Location` for (the app's 307 reads no
 * body: an upload to `/api/v1/jobs/flash/` was sent whole, then again to where it was redirected);
 * otherwise 100 is written and the request goes to the app. Node closes a connection answered
 * without 100, so its unsent body is never waited for.
 */
export function continueListener<Caller, Auth extends string>(
  routes: readonly ApiRoute<Caller, Auth>[],
  guard: RouteGuard<Caller, Auth>,
  app: (req: IncomingMessage, res: ServerResponse) => void,
  slashRedirect: (method: string, url: string) => string | undefined = () => undefined,
  /**
   * Methods none of whose routes (nor any middleware before them) read a body: answered without
   * `100 Continue` (RFC 9110 section 10.1.1 allows it). The bench service's GETs read none; the
   * relay's middleware reads every request's body, so it passes none.
   */
  readsNoBody: ReadonlySet<string> = new Set(),
): (req: IncomingMessage, res: ServerResponse) => void {
  const checks = routes.flatMap((route) => {
    const check = continueCheck(route, guard);
    return check ? [{ method: route.method.toUpperCase(), pattern: new RegExp(`^${route.path.replace(/\{[a-z_]+\}/g, '[^/]+')}$`), check }] : [];
  });
  return (req, res) => {
    const pathname = (req.url ?? '/').split('?')[0]!;
    const entry = checks.find((c) => c.method === req.method && c.pattern.test(pathname));
    const proceed = () => {
      res.writeContinue();
      app(req, res);
    };
    if (lacksOneHost(req) || readsNoBody.has(req.method ?? '') || (!entry && slashRedirect(req.method ?? '', req.url ?? '/') !== undefined)) {
      // The app's first answer to it, whatever the route or credential (a 400, the 307 to the slash
      // variant, a method that reads no body): its body is not asked for. Asking for a body nobody
      // reads let it arrive after the answer was written, unread when the connection closed, and
      // the kernel then resets the connection: the client lost what it had not read yet of a long
      // answer (a big /metrics, cut at 64 KiB).
      app(req, res);
      return;
    }
    if (!entry) {
      proceed();
      return;
    }
    entry.check(req).then(proceed, (err: unknown) => {
      if (!(err instanceof HttpError)) {
        // Not a refusal (e.g. the database did not answer): the app makes the same checks and
        // answers (and logs) whatever it is.
        proceed();
        return;
      }
      // The body was never asked for: close the connection rather than read past it.
      res.writeHead(err.status, { ...err.headers, 'Content-Type': 'application/json; charset=utf-8', 'X-Content-Type-Options': 'nosniff', Connection: 'close' });
      res.end(JSON.stringify({ detail: err.detail }));
    });
  };
}
