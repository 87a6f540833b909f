import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { undiciTransport } from './bench-transport.js';

let server: http.Server;
let baseUrl: string;
let connections = 0;
const seen: { method: string; body: string; type: string | undefined }[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (chunk: Buffer) => parts.push(chunk));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', body: Buffer.concat(parts).toString(), type: req.headers['content-type'] });
      if (req.url === '/hang') return; // never answers
      if (req.url === '/moved') return void res.writeHead(308, { location: '/a' }).end();
      res.writeHead(req.url === '/busy' ? 409 : 200, { 'content-type': 'application/json', 'retry-after': '3' }).end('{"ok":true}');
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('undiciTransport (the BenchClient default, decision 0800)', () => {
  it('sends the method, body and headers, answers status, headers and text', async () => {
    const signal = new AbortController().signal;
    const first = await undiciTransport({ method: 'POST', url: `${baseUrl}/a`, headers: { 'content-type': 'text/plain' }, body: 'hello', signal });
    const second = await undiciTransport({ method: 'GET', url: `${baseUrl}/busy`, headers: {}, signal });
    expect(first).toMatchObject({ status: 200, text: '{"ok":true}' });
    expect(second.status).toBe(409);
    expect(second.header('retry-after')).toBe('3');
    expect(second.header('x-absent')).toBeNull();
    expect(seen.slice(-2)).toEqual([
      { method: 'POST', body: 'hello', type: 'text/plain' },
      { method: 'GET', body: '', type: undefined },
    ]);
  });

  it('keeps its connections alive: calls one after another open none once the agent has its connections', async () => {
    const signal = new AbortController().signal;
    const call = (k: number) => undiciTransport({ method: k % 2 ? 'POST' : 'GET', url: `${baseUrl}/k`, headers: {}, ...(k % 2 ? { body: 'x' } : {}), signal });
    // undici may open a second connection for the call right behind the first (the first is freed a tick later).
    for (let k = 0; k < 2; k++) await call(k);
    const before = connections;
    for (let k = 0; k < 6; k++) await call(k);
    expect(connections).toBe(before);
  });

  it('rejects a call that cannot connect as fetch does: a TypeError with the socket error as its cause', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const failure = await undiciTransport({ method: 'GET', url: `http://127.0.0.1:${port}/`, headers: {}, signal: new AbortController().signal }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(TypeError);
    expect((failure as TypeError).cause).toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('an aborted call rejects at once, not as a connection failure', async () => {
    const abort = new AbortController();
    const call = undiciTransport({ method: 'GET', url: `${baseUrl}/hang`, headers: {}, signal: abort.signal });
    abort.abort(new Error('given up'));
    const failure = await call.catch((err: unknown) => err);
    expect(failure).not.toBeInstanceOf(TypeError);
  });

  it('follows a redirect as fetch did (method and body kept on 308)', async () => {
    const signal = new AbortController().signal;
    const answer = await undiciTransport({ method: 'POST', url: `${baseUrl}/moved`, headers: { 'content-type': 'text/plain' }, body: 'again', signal });
    expect(answer).toMatchObject({ status: 200, text: '{"ok":true}' });
    expect(seen.slice(-2).map((s) => [s.method, s.body])).toEqual([
      ['POST', 'again'],
      ['POST', 'again'],
    ]);
  });

  it('throws a call built wrong as it is, not as an unreachable bench', async () => {
    const signal = new AbortController().signal;
    const sent = undiciTransport({ method: 'GET', url: `${baseUrl}/a`, headers: { authorization: 'Bearer a\r\nx: y' }, signal });
    await expect(sent).rejects.not.toBeInstanceOf(TypeError);
  });
});
