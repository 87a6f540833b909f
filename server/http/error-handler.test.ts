import express from 'express';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { INPUT_MAX_DEPTH, TRUNCATED } from './bounded-input.js';
import { clientErrorOf, createErrorHandler } from './error-handler.js';
import { HttpError } from './http-error.js';
import { memoryLogger } from './logger.js';

describe('clientErrorOf', () => {
  it('answers the 4xx status of an express / body-parser error, with its message only when exposed', () => {
    expect(clientErrorOf(Object.assign(new Error('request entity too large'), { status: 413, expose: true }))).toEqual({ status: 413, detail: 'request entity too large' });
    expect(clientErrorOf(Object.assign(new Error('secret internals'), { statusCode: 400, expose: false }))).toEqual({ status: 400, detail: 'Bad Request' });
  });

  it('maps the router\'s path decode error to 404 Not Found', () => {
    expect(clientErrorOf(Object.assign(new URIError("Failed to decode param '%ZZ'"), { status: 400 }))).toEqual({ status: 404, detail: 'Not Found' });
  });

  it('leaves 5xx, missing or odd statuses to the bug path', () => {
    expect(clientErrorOf(Object.assign(new Error('x'), { status: 500 }))).toBeUndefined();
    expect(clientErrorOf(new Error('x'))).toBeUndefined();
    expect(clientErrorOf(Object.assign(new Error('x'), { status: '404' }))).toBeUndefined();
    expect(clientErrorOf('a string')).toBeUndefined();
  });
});

describe('createErrorHandler on real HTTP', () => {
  const servers: http.Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await new Promise<void>((r) => s.close(() => r()));
  });

  /** An app whose one route runs `route`, behind the one error handler; returns its origin. */
  async function appWith(route: express.RequestHandler, logger = memoryLogger()): Promise<string> {
    const app = express();
    app.get('/', route);
    app.use(createErrorHandler(logger));
    const server = app.listen(0, '127.0.0.1');
    servers.push(server);
    await once(server, 'listening');
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it('echoes a bounded input: JSON nested 100 000 deep is a 422 in JSON, not an HTML stack (issue 9)', async () => {
    let deep: unknown = 1;
    for (let k = 0; k < 100_000; k++) deep = { a: deep };
    const origin = await appWith(() => {
      throw new HttpError(422, [{ type: 'extra_forbidden', loc: ['body', 'a'], msg: 'Extra inputs are not permitted', input: deep }]);
    });
    const res = await fetch(origin);
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await res.json()) as { detail: { input: unknown }[] };
    expect(JSON.stringify(body.detail[0]!.input)).toBe(`${'{"a":'.repeat(INPUT_MAX_DEPTH)}"${TRUNCATED}"${'}'.repeat(INPUT_MAX_DEPTH)}`);
  });

  it('answers a generic JSON 500 when writing the error itself fails, and logs why', async () => {
    const logger = memoryLogger();
    const hostile = Object.defineProperty({}, 'x', {
      enumerable: true,
      get: () => {
        throw new Error('a getter that throws');
      },
    });
    const origin = await appWith(() => {
      throw new HttpError(422, [{ type: 'value_error', loc: ['body'], msg: 'x', input: hostile }]);
    }, logger);
    const res = await fetch(origin);
    expect(res.status).toBe(500);
    expect(await res.text()).toBe('{"detail":"Internal Server Error"}');
    expect(logger.lines).toEqual(['error: GET /: writing the error answer failed']);
  });

  it('cuts the connection of an answer that already started, never appending an HTML page', async () => {
    const logger = memoryLogger();
    const origin = await appWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"partial":');
      throw new Error('failed half-way');
    }, logger);
    // Whether the head got out first or not, the client never reads a complete answer.
    await expect(fetch(origin).then((res) => res.text())).rejects.toThrow();
    expect(logger.lines).toEqual(['error: GET / failed after the response started']);
  });
});
