import express from 'express';
import http from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { rawExchange } from '../../test/fuzz/raw-http.js';
import { listen, type ListeningServer } from './listen.js';
import { requireHost } from './malformed-request.js';

const open: ListeningServer[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((l) => l.close()));
});

async function started(): Promise<ListeningServer> {
  const l = await listen({ port: 0 });
  open.push(l);
  l.server.on('request', (_req: http.IncomingMessage, res: http.ServerResponse) => res.end('{"ok":true}'));
  return l;
}

describe('listen', () => {
  it('binds a free port on 127.0.0.1 and names its origin', async () => {
    const l = await started();
    expect(l.port).toBeGreaterThan(0);
    expect(l.origin).toBe(`http://127.0.0.1:${l.port}`);
    expect(await (await fetch(l.origin)).json()).toEqual({ ok: true });
  });

  it('answers a request node cannot parse in JSON', async () => {
    const l = await started();
    const exchange = await rawExchange(l.origin, { method: 'POST', path: '/', headers: { 'Content-Length': 3, 'Transfer-Encoding': 'chunked' }, body: Buffer.from('abc') });
    expect(exchange.responses.map((r) => ({ status: r.status, body: r.body.toString() }))).toEqual([{ status: 400, body: JSON.stringify({ detail: 'Invalid HTTP request received.' }) }]);
  });

  it('answers an Expect other than 100-continue with a JSON 417 and closes (node sent an empty chunked 417)', async () => {
    const l = await started();
    const exchange = await rawExchange(l.origin, { method: 'POST', path: '/', headers: { 'Content-Length': 2, Expect: 'something-else' }, body: Buffer.from('{}') });
    expect(exchange.responses.map((r) => ({ status: r.status, body: r.body.toString(), connection: r.headers.connection }))).toEqual([
      { status: 417, body: JSON.stringify({ detail: 'Expectation Failed: the only expectation understood is "Expect: 100-continue"' }), connection: 'close' },
    ]);
  });

  it('leaves a request without Host to the app, whose requireHost answers a JSON 400 (node answered an empty chunked 400)', async () => {
    const l = await listen({ port: 0 });
    open.push(l);
    const app = express();
    app.use(requireHost);
    app.get('/', (_req, res) => res.json({ ok: true }));
    l.server.on('request', app);
    const answer = (request: string) =>
      new Promise<string>((resolve) => {
        const socket = connect(l.port, '127.0.0.1');
        let text = '';
        socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
        socket.on('close', () => resolve(text));
        socket.end(request);
      });
    const without = await answer('GET / HTTP/1.1\r\n\r\n');
    expect(without).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(without).toMatch(/\r\nConnection: close\r\n/i);
    expect(without.split('\r\n\r\n')[1]).toBe(JSON.stringify({ detail: 'Invalid HTTP request received.' }));
    expect((await answer('GET / HTTP/1.0\r\n\r\n')).split('\r\n\r\n')[1]).toBe('{"ok":true}');
  });

  it('close resolves with a keep-alive connection still open', async () => {
    const l = await started();
    const agent = new http.Agent({ keepAlive: true });
    await new Promise<void>((resolve, reject) => {
      http.get(l.origin, { agent }, (res) => res.resume().on('end', resolve)).on('error', reject);
    });
    await l.close();
    open.splice(open.indexOf(l), 1);
    expect(l.server.listening).toBe(false);
    agent.destroy();
  });

  it('rejects when the port is taken, leaving nothing open', async () => {
    const first = await started();
    await expect(listen({ port: first.port })).rejects.toMatchObject({ code: 'EADDRINUSE' });
  });
});
