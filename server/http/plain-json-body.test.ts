import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOT_UTF8_ERROR_TYPE, parsedWithoutEscapes, plainJsonBody, refuseInvalidUtf8 } from './plain-json-body.js';

const LIMIT_BYTES = 64;

/**
 * One app per parser, each answering what the parser made of the body (or its error's status,
 * type and text): `plainJsonBody` must answer as `express.json` alone does, the relay's settings.
 */
function parserApp(parse: RequestHandler) {
  const app = express();
  app.post('/', parse, (req, res) => {
    res.json({ body: req.body as unknown });
  });
  const onError: ErrorRequestHandler = (err: { status?: number; type?: string; body?: unknown }, _req, res, _next) => {
    res.status(299).json({ status: err.status, type: err.type, body: err.body });
  };
  app.use(onError);
  return app;
}

const generalJson = express.json({ limit: LIMIT_BYTES, type: ['application/json', 'application/*+json'], strict: false, verify: refuseInvalidUtf8 });
let generalCalls = 0;
const counted: RequestHandler = (req, res, next) => {
  generalCalls++;
  generalJson(req, res, next);
};
const servers: ReturnType<ReturnType<typeof express>['listen']>[] = [];
const ports: { plain: number; general: number } = { plain: 0, general: 0 };

beforeAll(async () => {
  for (const [name, app] of [
    ['plain', parserApp(plainJsonBody({ limitBytes: LIMIT_BYTES }, counted))],
    ['general', parserApp(generalJson)],
  ] as const) {
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    servers.push(server);
    ports[name] = (server.address() as AddressInfo).port;
  }
});
afterAll(async () => {
  for (const server of servers) await new Promise((resolve) => server.close(resolve));
});

function post(port: number, headers: Record<string, string>, body: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const bom = Buffer.from([0xef, 0xbb, 0xbf]);
const cases: { name: string; type?: string; body: Buffer; plain: boolean }[] = [
  { name: 'an object', type: 'application/json', body: Buffer.from('{"a":[1,"é"],"b":null}'), plain: true },
  { name: 'a string (any JSON value, strict: false)', type: 'application/json', body: Buffer.from('"x"'), plain: true },
  { name: 'a byte-order mark first', type: 'application/json; charset=utf-8', body: Buffer.concat([bom, Buffer.from('{"a":1}')]), plain: true },
  { name: 'only a byte-order mark', type: 'application/json', body: bom, plain: true },
  { name: 'invalid UTF-8', type: 'application/json', body: Buffer.from([0x22, 0xff, 0x22]), plain: true },
  { name: 'an encoded surrogate (not UTF-8)', type: 'application/json', body: Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22]), plain: true },
  { name: 'JSON that does not parse', type: 'application/json', body: Buffer.from('{"a":'), plain: true },
  { name: 'an upper-case type', type: 'Application/JSON', body: Buffer.from('[1]'), plain: true },
  { name: 'over the limit', type: 'application/json', body: Buffer.from(`"${'x'.repeat(LIMIT_BYTES)}"`), plain: false },
  { name: 'another charset', type: 'application/json; charset=latin1', body: Buffer.from('{}'), plain: false },
  { name: 'a +json type', type: 'application/problem+json', body: Buffer.from('{"a":2}'), plain: false },
  { name: 'text/plain', type: 'text/plain', body: Buffer.from('{"a":3}'), plain: false },
  { name: 'an empty body', type: 'application/json', body: Buffer.alloc(0), plain: false },
];

describe('plainJsonBody', () => {
  for (const c of cases) {
    it(`answers as express.json for ${c.name}${c.plain ? ', without it' : ', through it'}`, async () => {
      const headers: Record<string, string> = { 'content-length': String(c.body.length), ...(c.type ? { 'content-type': c.type } : {}) };
      const before = generalCalls;
      const plain = await post(ports.plain, headers, c.body);
      const general = await post(ports.general, headers, c.body);
      expect(plain).toEqual(general);
      expect(generalCalls - before).toBe(c.plain ? 0 : 1);
    });
  }

  it('answers as express.json for a gzip body, through it', async () => {
    const { gzipSync } = await import('node:zlib');
    const body = gzipSync('{"z":1}');
    const headers = { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': String(body.length) };
    const before = generalCalls;
    expect(await post(ports.plain, headers, body)).toEqual(await post(ports.general, headers, body));
    expect(generalCalls - before).toBe(1);
  });

  it('leaves a request whose connection is already gone to the general parser', () => {
    let general = 0;
    const parse = plainJsonBody({ limitBytes: LIMIT_BYTES }, (_req, _res, next) => {
      general++;
      next();
    });
    const req = { headers: { 'content-type': 'application/json', 'content-length': '2' }, readableEnded: false, readableFlowing: null, destroyed: true } as unknown as Parameters<RequestHandler>[0];
    parse(req, {} as Parameters<RequestHandler>[1], () => {});
    expect(general).toBe(1);
  });

  it('says a body parsed from text without a \\u escape holds no U+0000 and no lone surrogate, and says nothing of others', async () => {
    const { PassThrough } = await import('node:stream');
    const parsed = async (text: Buffer) => {
      const parse = plainJsonBody({ limitBytes: LIMIT_BYTES }, () => {
        throw new Error('the general parser was not expected');
      });
      const req = Object.assign(new PassThrough(), { headers: { 'content-type': 'application/json', 'content-length': String(text.length) } }) as unknown as Parameters<RequestHandler>[0];
      const done = new Promise<unknown>((resolve) => parse(req, {} as Parameters<RequestHandler>[1], resolve));
      (req as unknown as InstanceType<typeof PassThrough>).end(text);
      expect(await done).toBeUndefined();
      return { body: req.body as unknown, withoutEscapes: parsedWithoutEscapes(req) };
    };
    expect(await parsed(Buffer.from('{"a":["é",1]}'))).toEqual({ body: { a: ['é', 1] }, withoutEscapes: true });
    for (const escaped of ['"\\u0000"', '{"k\\ud800":1}', '"\\u00e9"']) expect((await parsed(Buffer.from(escaped))).withoutEscapes).toBe(false);
  });

  it('refuses bytes that are not UTF-8 (an encoded surrogate among them) with FastAPI\'s 400, with or without it', async () => {
    for (const body of [Buffer.from([0x22, 0xff, 0x22]), Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22]), Buffer.from('{"t":"caf\xe9"}', 'latin1')]) {
      const headers = { 'content-type': 'application/json', 'content-length': String(body.length) };
      for (const port of [ports.plain, ports.general]) {
        const answer = await post(port, headers, body);
        expect(answer.status).toBe(299);
        expect(JSON.parse(answer.text)).toMatchObject({ status: 400, type: NOT_UTF8_ERROR_TYPE });
      }
    }
  });

  it('hands on a body cut short as request.aborted, as raw-body does', async () => {
    const parse = plainJsonBody({ limitBytes: LIMIT_BYTES }, () => {
      throw new Error('the general parser was not expected');
    });
    const { PassThrough } = await import('node:stream');
    const stream = new PassThrough();
    const req = Object.assign(stream, { headers: { 'content-type': 'application/json', 'content-length': '10' } }) as unknown as Parameters<RequestHandler>[0];
    const error = new Promise<unknown>((resolve) => parse(req, {} as Parameters<RequestHandler>[1], resolve));
    // 4 of the 10 declared bytes, then the end: the connection closed mid-body.
    stream.end('{"a"');
    expect(await error).toMatchObject({ status: 400, type: 'request.aborted' });
  });
});
