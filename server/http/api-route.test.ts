import type { IncomingMessage } from 'node:http';
import express, { type RequestHandler } from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { type ApiRoute, mountApiRoutes, type RouteGuard } from './api-route.js';
import { continueCheck } from './expect-continue.js';
import { createErrorHandler, notFoundHandler } from './error-handler.js';
import { HttpError } from './http-error.js';
import { listen, type ListeningServer } from './listen.js';
import type { Logger } from './logger.js';

type Auth = 'token' | 'admin';
type Caller = { who: string };

/** A guard as a service writes one: resolves the caller or throws its 401. */
const guard: RouteGuard<Caller, Auth> = async (route, req) => {
  if (route.auth === 'token') {
    if (req.headers.authorization !== 'Bearer good') throw new HttpError(401, 'Not authenticated');
    return { who: 'agent-1' };
  }
  if (route.auth === 'admin' && req.headers['x-admin-token'] !== 'root') throw new HttpError(401, 'wrong admin token');
  return { who: 'anyone' };
};

const quietLogger: Logger = { info: () => {}, warn: () => {}, error: () => {} };

function routeWith(path: string, auth: Auth | undefined, seen: Caller[], beforeContinue?: ApiRoute['beforeContinue']): ApiRoute<Caller, Auth> {
  return {
    method: 'post',
    path,
    summary: path,
    ...(auth ? { auth } : {}),
    handler: async (_req, res, caller) => {
      seen.push(caller);
      res.json(caller);
    },
    ...(beforeContinue ? { beforeContinue } : {}),
  };
}

let running: ListeningServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

/** Serves `routes` through `mountApiRoutes` on loopback, as both services do. */
async function serve(routes: ApiRoute<Caller, Auth>[], beforeHandler?: RequestHandler): Promise<string> {
  const app = express();
  mountApiRoutes(app, routes, guard, { ...(beforeHandler ? { beforeHandler } : {}), otherPaths: [{ method: 'get', path: '/elsewhere' }] });
  app.use(notFoundHandler);
  app.use(createErrorHandler(quietLogger));
  running = await listen({ port: 0 });
  running.server.on('request', app);
  return running.origin;
}

describe('auth is enforced by the router, not by handlers', () => {
  it('a route with auth never reaches its handler without a good credential, and gets the caller with one', async () => {
    const seen: Caller[] = [];
    const origin = await serve([routeWith('/t', 'token', seen)]);
    const refused = await fetch(`${origin}/t`, { method: 'POST' });
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ detail: 'Not authenticated' });
    expect(seen).toEqual([]);
    const ok = await fetch(`${origin}/t`, { method: 'POST', headers: { authorization: 'Bearer good' } });
    expect(await ok.json()).toEqual({ who: 'agent-1' });
  });

  it('the guard runs before the body parser, so a refused caller costs no parse', async () => {
    const parsed: string[] = [];
    const parser: RequestHandler = (req, _res, next) => {
      parsed.push(req.path);
      next();
    };
    const origin = await serve([routeWith('/a', 'admin', []), routeWith('/open', undefined, [])], parser);
    expect((await fetch(`${origin}/a`, { method: 'POST', headers: { 'x-admin-token': 'nope' } })).status).toBe(401);
    expect(parsed).toEqual([]);
    expect((await fetch(`${origin}/a`, { method: 'POST', headers: { 'x-admin-token': 'root' } })).status).toBe(200);
    expect((await fetch(`${origin}/open`, { method: 'POST' })).status).toBe(200);
    expect(parsed).toEqual(['/a', '/open']);
  });

  it('another method on a served path is a 405 naming the allowed ones, for paths served elsewhere too', async () => {
    const origin = await serve([routeWith('/items/{id}', undefined, [])]);
    const wrong = await fetch(`${origin}/items/7`, { method: 'DELETE' });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
    expect((await fetch(`${origin}/elsewhere`, { method: 'POST' })).status).toBe(405);
    expect((await fetch(`${origin}/nowhere`, { method: 'POST' })).status).toBe(404);
  });

  it("the Expect: 100-continue check refuses a bad credential before the route's own check runs", async () => {
    const checked: string[] = [];
    const check = continueCheck(routeWith('/t', 'token', [], async () => void checked.push('size')), guard)!;
    await expect(check({ headers: {} } as IncomingMessage)).rejects.toMatchObject({ status: 401 });
    expect(checked).toEqual([]);
    await check({ headers: { authorization: 'Bearer good' } } as unknown as IncomingMessage);
    expect(checked).toEqual(['size']);
    expect(continueCheck(routeWith('/t', 'token', []), guard)).toBeUndefined();
  });
});
