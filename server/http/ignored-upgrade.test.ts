import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isWebSocketUpgrade, serveIgnoringUpgrade } from './ignored-upgrade.js';

/**
 * A server with an `upgrade` listener (as the bench has, for its debug WebSockets) gets every request
 * that carries an Upgrade there: `serveIgnoringUpgrade` answers the ones it does not take as plain
 * HTTP, body included. The app here echoes the method, path and body it read.
 */
let server: Server;
let port: number;
const webSockets: string[] = [];

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
    if (!isWebSocketUpgrade(req)) return serveIgnoringUpgrade(echo, req, socket, head);
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

describe('serveIgnoringUpgrade', () => {
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

  it('leaves WebSocket upgrades to the listener that takes them', async () => {
    expect(await exchange([`GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: WebSocket\r\n\r\n`])).toMatch(/^HTTP\/1\.1 404/);
    expect(webSockets).toEqual(['/ws']);
  });
});
