import { createClock } from '@sinonjs/fake-timers';
import { once } from 'node:events';
import { type IncomingMessage, type RequestListener, type Server, type ServerResponse, createServer } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { IGNORED_UPGRADE_LINGER_MS, ignoredUpgrades, upgradeListener } from './ignored-upgrade.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, listen } from './listen.js';

/**
 * A server with an `upgrade` listener (as the bench has, for its debug streams) gets every request
 * that carries an Upgrade there: `ignoredUpgrades` answers the ones it does not take as plain
 * HTTP, body included. The app here echoes the method, path and body it read.
 */
let server: Server;
let port: number;
const webSockets: string[] = [];
const fakeTime = createClock(0);
const ignored = ignoredUpgrades({ clock: clockFromFakeTimers(fakeTime) });
/** The app for the next request (the echo when unset), and the server's end of its connection. */
let nextApp: RequestListener | undefined;
let lastSocket: Socket | undefined;

function echo(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ method: req.method, url: req.url, body: Buffer.concat(chunks).toString('utf8') }));
  });
}

beforeAll(async () => {
  server = createServer(echo);
  server.on('upgrade', (req: IncomingMessage, socket, head: Buffer) => {
    // The service here takes only /ws (as the bench takes its debug paths).
    if (req.url !== '/ws') {
      lastSocket = socket as Socket;
      const app = nextApp ?? echo;
      nextApp = undefined;
      return ignored.serve(app, req, socket, head);
    }
    webSockets.push(req.url ?? '');
    socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

/** Sends `parts` (with a pause between them, so a body arrives after its head) and reads until the server closes. */
function exchange(parts: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
    const send = (i: number) => {
      if (i >= parts.length) return;
      socket.write(parts[i]!);
      setImmediate(() => send(i + 1));
    };
    send(0);
  });
}

const h2c = 'Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n';

describe('ignoredUpgrades', () => {
  it('answers a GET that asks for h2c (curl --http2) as plain HTTP, then closes the connection', async () => {
    const answer = await exchange([`GET /health?x=1 HTTP/1.1\r\nHost: a\r\n${h2c}\r\n`]);
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(answer.toLowerCase()).toContain('connection: close');
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({ method: 'GET', url: '/health?x=1', body: '' });
  });

  it('reads a Content-Length body, its first bytes with the head and the rest later, and stops at its length', async () => {
    const answer = await exchange([`POST /register HTTP/1.1\r\nHost: a\r\n${h2c}Content-Length: 11\r\n\r\nlabel`, '=alice', 'ignored after the body']);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({ method: 'POST', url: '/register', body: 'label=alice' });
  });

  it('refuses a chunked body with a 400 in JSON, which it cannot read without the parser', async () => {
    const answer = await exchange([`POST /register HTTP/1.1\r\nHost: a\r\n${h2c}Transfer-Encoding: chunked\r\n\r\n5\r\nlabel\r\n0\r\n\r\n`]);
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({ detail: expect.stringContaining('chunked') });
  });

  it('leaves the upgrades a service takes to it', async () => {
    expect(await exchange([`GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: WebSocket\r\n\r\n`])).toMatch(/^HTTP\/1\.1 404/);
    expect(webSockets).toEqual(['/ws']);
  });
});

/** A client socket on the test server that keeps its side open after the server's FIN, as a client still sending a body does. */
async function opened(): Promise<{ socket: Socket; received: () => string }> {
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  await once(socket, 'connect');
  return { socket, received: () => text };
}

/** Resolves once the server's end of the last connection has read `bytes` more bytes. */
function serverReads(bytes: number): Promise<void> {
  return new Promise((resolve) => {
    let readBytes = 0;
    const count = (chunk: Buffer) => {
      readBytes += chunk.length;
      if (readBytes < bytes) return;
      lastSocket!.off('data', count);
      resolve();
    };
    lastSocket!.on('data', count);
  });
}

describe('ignoredUpgrades: deadlines and closing', () => {
  it('cuts a request whose body has not all arrived by the request deadline, on the injected clock', async () => {
    const called = new Promise<void>((resolve) => (nextApp = () => resolve()));
    const { socket } = await opened();
    socket.write(`POST /slow HTTP/1.1\r\nHost: a\r\n${h2c}Content-Length: 10\r\n\r\nab`);
    await called;
    fakeTime.tick(DEFAULT_REQUEST_TIMEOUT_MS - 1);
    expect(lastSocket!.destroyed).toBe(false);
    fakeTime.tick(1);
    expect(lastSocket!.destroyed).toBe(true);
    socket.destroy();
  });

  it('does not time an answer that waits once the request is whole (a long poll)', async () => {
    let answer: (() => void) | undefined;
    const called = new Promise<void>((resolve) => {
      nextApp = (_req, res) => {
        answer = () => res.end('late');
        resolve();
      };
    });
    const { socket, received } = await opened();
    socket.write(`GET /wait HTTP/1.1\r\nHost: a\r\n${h2c}\r\n`);
    await called;
    fakeTime.tick(DEFAULT_REQUEST_TIMEOUT_MS * 2);
    expect(lastSocket!.destroyed).toBe(false);
    answer!();
    await once(socket, 'end');
    expect(received()).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*late$/);
    socket.destroy();
  });

  it('answers early (413) and reads the rest of the body the client still sends, then closes when the client does', async () => {
    nextApp = (_req, res) => {
      res.statusCode = 413;
      res.end('{"detail":"too large"}');
    };
    const { socket, received } = await opened();
    socket.write(`POST /big HTTP/1.1\r\nHost: a\r\n${h2c}Content-Length: 100000\r\n\r\nfirst`);
    await once(socket, 'end');
    expect(received()).toMatch(/^HTTP\/1\.1 413 /);
    // Closing with these bytes unread would reset the connection, and could lose the answer.
    const read = serverReads(50_000);
    socket.write(Buffer.alloc(50_000, 0x61));
    await read;
    expect(lastSocket!.destroyed).toBe(false);
    const closed = once(lastSocket!, 'close');
    socket.end();
    await closed;
  });

  it('refuses a chunked body with 400, then reads what the client still sends', async () => {
    const { socket, received } = await opened();
    socket.write(`POST /register HTTP/1.1\r\nHost: a\r\n${h2c}Transfer-Encoding: chunked\r\n\r\n5\r\nlabel\r\n`);
    await once(socket, 'end');
    expect(received()).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    const read = serverReads(5);
    socket.write('0\r\n\r\n');
    await read;
    expect(lastSocket!.destroyed).toBe(false);
    socket.destroy();
  });

  it('closes a connection whose client never closes its side once the answer has lingered', async () => {
    const { socket } = await opened();
    socket.write(`GET /health HTTP/1.1\r\nHost: a\r\n${h2c}\r\n`);
    await once(socket, 'end');
    // The lingering starts once the answer has left (the server's side finished), not when the FIN is seen here.
    if (!lastSocket!.writableFinished) await once(lastSocket!, 'finish');
    fakeTime.tick(IGNORED_UPGRADE_LINGER_MS - 1);
    expect(lastSocket!.destroyed).toBe(false);
    fakeTime.tick(1);
    expect(lastSocket!.destroyed).toBe(true);
    socket.destroy();
  });
});

describe('upgradeListener', () => {
  it('closes a streamed answer to an h2c request when the service closes, so the server can close', async () => {
    const listening = await listen({ port: 0 });
    const streaming: RequestListener = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
    };
    const upgrades = upgradeListener({ takes: () => false, upgrade: () => undefined, close: () => undefined }, streaming);
    listening.server.on('request', streaming);
    listening.server.on('upgrade', upgrades.upgrade);
    const socket = connect(listening.port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write(`GET /live HTTP/1.1\r\nHost: a\r\n${h2c}\r\n`);
    await once(socket, 'data');
    const closed = once(socket, 'close');
    upgrades.close();
    await listening.close();
    await closed;
  });
});
