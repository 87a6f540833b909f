import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { startRecordingProxy } from './recording-proxy.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

/** A target that echoes what it got as JSON. */
async function echoServer(): Promise<string> {
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      res.writeHead(req.url === '/missing' ? 404 : 200, { 'content-type': 'application/json', 'x-target': 'yes' });
      res.end(JSON.stringify({ method: req.method, url: req.url, authorization: req.headers.authorization ?? null, body: Buffer.concat(parts).toString() }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('startRecordingProxy', () => {
  it('forwards requests unchanged (bench at /, relay under /relay) and records both sides', async () => {
    const bench = await echoServer();
    const relay = await echoServer();
    const proxy = await startRecordingProxy({ benchTarget: bench, relayTarget: relay, port: 0, clock: systemClock });
    closers.push(() => proxy.close());
    const a = await fetch(`${proxy.url}/api/v1/sessions?x=1`, { method: 'POST', headers: { authorization: 'Bearer hb_secret' }, body: new URLSearchParams({ board: 'pico' }) });
    expect(a.status).toBe(200);
    expect(a.headers.get('x-target')).toBe('yes');
    expect(await a.json()).toEqual({ method: 'POST', url: '/api/v1/sessions?x=1', authorization: 'Bearer hb_secret', body: 'board=pico' });
    const b = await fetch(`${proxy.relayUrl}/missing`);
    expect(b.status).toBe(404);
    expect(((await b.json()) as { url: string }).url).toBe('/missing');

    const [first, second] = proxy.exchanges();
    expect(first).toMatchObject({ service: 'bench', method: 'POST', path: '/api/v1/sessions?x=1', status: 200 });
    expect(first?.requestHeaders.authorization).toBe('Bearer hb_secret');
    expect(new TextDecoder().decode(first?.requestBody)).toBe('board=pico');
    expect(second).toMatchObject({ service: 'relay', method: 'GET', path: '/missing', status: 404 });
    expect(first?.requestHeaders.host).toBeUndefined();
  });

  it('refuses bodies over the limit with 413 and records nothing', async () => {
    const proxy = await startRecordingProxy({ benchTarget: await echoServer(), port: 0, clock: systemClock, maxBodyBytes: 10 });
    closers.push(() => proxy.close());
    const r = await fetch(`${proxy.url}/x`, { method: 'POST', body: 'x'.repeat(11) });
    expect(r.status).toBe(413);
    expect(proxy.exchanges()).toEqual([]);
  });

  it('answers 502 naming the service when the target is down', async () => {
    const proxy = await startRecordingProxy({ benchTarget: 'http://127.0.0.1:1', port: 0, clock: systemClock });
    closers.push(() => proxy.close());
    const r = await fetch(`${proxy.url}/api/v1/health`);
    expect(r.status).toBe(502);
    expect(((await r.json()) as { detail: string }).detail).toMatch(/bench service unreachable/);
  });
});
