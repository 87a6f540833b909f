import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { rawExchange } from '../../test/fuzz/raw-http.js';
import { answerMalformedRequest } from './malformed-request.js';

let server: http.Server | undefined;
afterEach(async () => {
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

async function origin(): Promise<string> {
  server = http.createServer({ maxHeaderSize: 1024 }, (_req, res) => res.end('{}'));
  server.on('clientError', answerMalformedRequest);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('answerMalformedRequest', () => {
  it.each([
    ['two different Content-Lengths', { 'Content-Length': '2\r\nContent-Length: 3' }, 400, 'Invalid HTTP request received.'],
    ['Content-Length with chunked', { 'Content-Length': 3, 'Transfer-Encoding': 'chunked' }, 400, 'Invalid HTTP request received.'],
    ['headers over maxHeaderSize', { 'X-Big': 'b'.repeat(4096) }, 431, 'Request Header Fields Too Large'],
  ])('answers a request node cannot parse (%s) in JSON and closes', async (_name, headers, status, detail) => {
    const exchange = await rawExchange(await origin(), { method: 'POST', path: '/', headers, body: Buffer.from('abc') });
    expect(exchange.responses.map((r) => ({ status: r.status, type: r.headers['content-type'], connection: r.headers.connection, body: r.body.toString() }))).toEqual([
      { status, type: 'application/json; charset=utf-8', connection: 'close', body: JSON.stringify({ detail }) },
    ]);
  });
});
