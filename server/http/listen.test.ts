import express from 'express';
import http from 'node:http';
import { type AddressInfo, type Socket, connect, createServer as createNetServer } from 'node:net';
import { channel as diagnosticsChannel } from 'node:diagnostics_channel';
import { once } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { rawExchange } from '../../test/fuzz/raw-http.js';
import { DEFAULT_HEADERS_TIMEOUT_MS, DEFAULT_MAX_CONNECTIONS, DEFAULT_SEND_STALL_TIMEOUT_MS, type ListenOptions, listen, type ListeningServer } from './listen.js';
import { requireHost } from './malformed-request.js';

const open: ListeningServer[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((l) => l.close()));
});

async function started(options: Omit<ListenOptions, 'port'> = {}): Promise<ListeningServer> {
  const l = await listen({ port: 0, ...options });
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

  it('rejects when the port is taken, leaving nothing open: no channel subscription, no interval', async () => {
    // The port is held by a plain socket server, so no other listen() subscribes in this test.
    const holder = createNetServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as AddressInfo;
    const intervals = new Set<unknown>();
    const made = vi.spyOn(globalThis, 'setInterval');
    const cleared = vi.spyOn(globalThis, 'clearInterval').mockImplementation((handle) => {
      intervals.delete(handle);
      clearTimeout(handle);
    });
    try {
      const listening = listen({ port });
      for (const result of made.mock.results) intervals.add(result.value);
      await expect(listening).rejects.toMatchObject({ code: 'EADDRINUSE' });
      expect(made).toHaveBeenCalled();
      expect(intervals.size).toBe(0);
      expect(['http.server.request.start', 'http.server.response.finish'].map((name) => diagnosticsChannel(name).hasSubscribers)).toEqual([false, false]);
    } finally {
      made.mockRestore();
      cleared.mockRestore();
      holder.close();
    }
  });

  it('caps open connections at 1024 (its own cap, not node\'s: connection-cap.test.ts) and times a request head at 30 s by default', async () => {
    const l = await started();
    expect([DEFAULT_MAX_CONNECTIONS, DEFAULT_HEADERS_TIMEOUT_MS, DEFAULT_SEND_STALL_TIMEOUT_MS]).toEqual([1024, 30_000, 60_000]);
    expect([l.server.maxConnections, l.server.headersTimeout]).toEqual([undefined, 30_000]);
    expect(l.server.requestTimeout).toBe(300_000);
  });

  it('answers a request whose head stalls past headersTimeoutMs 408 and closes it, while an answer that waits (a long poll) is not cut', async () => {
    const l = await listen({ port: 0, headersTimeoutMs: 50 });
    open.push(l);
    let releaseLongPoll = () => {};
    const longPollHeld = new Promise<void>((resolve) => {
      l.server.on('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
        releaseLongPoll = () => res.end('{"waited":true}');
        resolve();
      });
    });
    const longPoll = fetch(l.origin);
    await longPollHeld;

    const stalled = connect(l.port, '127.0.0.1');
    let text = '';
    stalled.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    stalled.write('GET / HTTP/1.1\r\nHost: x\r\n');
    await once(stalled, 'close');
    expect(text).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(text.split('\r\n\r\n')[1]).toBe(JSON.stringify({ detail: 'Request Timeout' }));

    // The stalled head was cut by a check that ran after the long poll had waited longer than the bound.
    releaseLongPoll();
    const answer = await longPoll;
    expect([answer.status, await answer.json()]).toEqual([200, { waited: true }]);
  });

  it('destroys a connection whose client stopped reading a large answer after sendStallTimeoutMs, while a long poll with nothing to send is not cut', async () => {
    const l = await listen({ port: 0, sendStallTimeoutMs: 50 });
    open.push(l);
    let releaseLongPoll = () => {};
    let longPollHeld = () => {};
    const held = new Promise<void>((resolve) => (longPollHeld = resolve));
    l.server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.url === '/large') {
        // More than the loopback socket buffers hold, so bytes stay queued while nobody reads.
        res.end(Buffer.alloc(64 * 1024 * 1024));
        return;
      }
      releaseLongPoll = () => res.end('{"waited":true}');
      longPollHeld();
    });
    const longPoll = fetch(l.origin);
    await held;

    const serverSide = once(l.server, 'connection') as Promise<[Socket]>;
    const reader = connect(l.port, '127.0.0.1');
    reader.on('error', () => {}); // the reset is the point
    reader.pause();
    reader.write('GET /large HTTP/1.1\r\nHost: x\r\n\r\n');
    const [socket] = await serverSide;
    await once(socket, 'close'); // without the bound, it never closes and the test times out
    expect(socket.destroyed).toBe(true);

    // Cut by a check that ran after the long poll had waited longer than the bound.
    releaseLongPoll();
    const answer = await longPoll;
    expect([answer.status, await answer.json()]).toEqual([200, { waited: true }]);
    reader.destroy();
  });

  it('refuses a cap or a timeout that is not a whole number above 0', async () => {
    await expect(listen({ port: 0, maxConnections: 0 })).rejects.toThrow(/maxConnections must be a whole number above 0/);
    await expect(listen({ port: 0, headersTimeoutMs: 1.5 })).rejects.toThrow(/headersTimeoutMs must be a whole number of ms above 0/);
    await expect(listen({ port: 0, sendStallTimeoutMs: 0 })).rejects.toThrow(/sendStallTimeoutMs must be a whole number of ms above 0/);
  });
});
