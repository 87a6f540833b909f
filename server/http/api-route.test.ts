import type { IncomingMessage } from 'node:http';
import type { Request, Response } from 'express';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { type ApiRoute, type RouteCaller, type RouteGuards, continueCheck, serveApiRoute } from './api-route.js';
import { HttpError } from './http-error.js';

const guards: RouteGuards<string> = {
  bearer: async (req) => {
    if (req.headers.authorization !== 'Bearer good') throw new HttpError(401, 'Not authenticated');
    return 'agent-1';
  },
  admin: (req) => {
    if (req.headers['x-admin-token'] !== 'root') throw new HttpError(401, 'wrong admin token');
  },
};

function routeWith(auth: ApiRoute['auth'], seen: Array<RouteCaller<string>>, beforeContinue?: ApiRoute['beforeContinue']): ApiRoute<string> {
  return {
    method: 'get',
    path: '/x',
    operationId: 'x',
    summary: 'x',
    tags: [],
    ...(auth ? { auth } : {}),
    response: z.object({}),
    errors: {},
    handler: async (_req, _res, caller) => {
      seen.push(caller);
    },
    ...(beforeContinue ? { beforeContinue } : {}),
  };
}

const request = (headers: Record<string, string>) => ({ headers }) as unknown as Request;
const response = {} as Response;

describe('auth is enforced by the router, not by handlers', () => {
  it('a bearer route never reaches its handler without a good token, and gets the agent with one', async () => {
    const seen: Array<RouteCaller<string>> = [];
    const serve = serveApiRoute(routeWith('bearer', seen), guards);
    await expect(serve(request({}), response)).rejects.toMatchObject({ status: 401 });
    expect(seen).toEqual([]);
    await serve(request({ authorization: 'Bearer good' }), response);
    expect(seen).toEqual([{ agent: 'agent-1' }]);
  });

  it('an admin route checks the admin token first; an open route checks nothing', async () => {
    const seen: Array<RouteCaller<string>> = [];
    await expect(serveApiRoute(routeWith('admin', seen), guards)(request({ 'x-admin-token': 'nope' }), response)).rejects.toMatchObject({ status: 401 });
    expect(seen).toEqual([]);
    await serveApiRoute(routeWith('admin', seen), guards)(request({ 'x-admin-token': 'root' }), response);
    await serveApiRoute(routeWith(undefined, seen), guards)(request({}), response);
    expect(seen).toEqual([{ agent: undefined }, { agent: undefined }]);
  });

  it('the Expect: 100-continue check refuses a bad credential before the route\'s own check runs', async () => {
    const checked: string[] = [];
    const check = continueCheck(routeWith('bearer', [], async () => void checked.push('size')), guards)!;
    await expect(check({ headers: {} } as IncomingMessage)).rejects.toMatchObject({ status: 401 });
    expect(checked).toEqual([]);
    await check({ headers: { authorization: 'Bearer good' } } as unknown as IncomingMessage);
    expect(checked).toEqual(['size']);
    expect(continueCheck(routeWith('bearer', []), guards)).toBeUndefined();
  });
});
