import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { listen } from './listen.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

describe('an Expect refused before 100 Continue, whose client sends its body anyway', () => {
  // In a process of its own, as a client is (in the server's, the answer was read before the reset came).
  // It sends the head and, without waiting for 100, a 32 MiB body; prints what it read and how the connection ended.
  const client = `
    const socket = require('node:net').connect(Number(process.argv[1]), '127.0.0.1');
    let received = '';
    let failed = null;
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('error', (err) => (failed = err.code));
    socket.on('close', () => console.log(JSON.stringify({ received, failed })));
    socket.write('POST /upload HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 33554432\\r\\nExpect: ' + process.argv[2] + '\\r\\n\\r\\n');
    socket.write(Buffer.alloc(33554432));`;

  it.each([
    // malformed-request.ts answerUnmetExpectation, attached by listen: writeHead(417, { Connection: 'close' }).
    ['an unknown Expect (417)', 'x-unmet', /^HTTP\/1\.1 417 /, 'Expectation Failed: the only expectation understood is "Expect: 100-continue"'],
    // As expect-continue.ts refuses a request from its headers: writeHead(413, { Connection: 'close' }).
    ['100-continue refused from the headers (413)', '100-continue', /^HTTP\/1\.1 413 /, 'the request body is larger than the limit'],
  ])('%s: the client reads the whole answer, not a reset', async (_case, expectation, status, detail) => {
    const l = await listen({ port: 0 });
    cleanups.push(() => void l.close());
    l.server.on('checkContinue', (_req, res) => {
      const body = JSON.stringify({ detail: 'the request body is larger than the limit' });
      res.writeHead(413, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
      res.end(body);
    });
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', client, String(l.port), expectation]);
    const { received } = JSON.parse(stdout) as { received: string };
    expect(received).toMatch(status);
    expect(received.split('\r\n\r\n')[1]).toBe(JSON.stringify({ detail }));
  });
});
