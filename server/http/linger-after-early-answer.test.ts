import { createClock } from '@sinonjs/fake-timers';
import { once } from 'node:events';
import { type Server, createServer } from 'node:http';
import { type AddressInfo, type Socket, connect } from 'node:net';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { lingerAfterEarlyAnswers } from './linger-after-early-answer.js';
import { listen } from './listen.js';

const LINGER_MS = 30_000;
const ANSWER = JSON.stringify({ detail: 'too large' });
const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/**
 * A server answering 413 (`Connection: close`, given to `writeHead`) as soon as a head arrives,
 * body unread, lingering on a fake clock; and a client that sent the head and 10 of 100 bytes.
 */
async function earlyAnswered() {
  const fake = createClock(0);
  const server: Server = createServer((_req, res) => {
    res.writeHead(413, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(ANSWER), Connection: 'close' });
    res.end(ANSWER);
  });
  const stop = lingerAfterEarlyAnswers(server, clockFromFakeTimers(fake), LINGER_MS);
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => {
    stop();
    server.closeAllConnections();
    server.close();
  });
  // Half-open allowed: a client that goes on sending its body after the answer has ended.
  const client = connect({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', allowHalfOpen: true });
  client.on('error', () => {});
  cleanups.push(() => client.destroy());
  let received = '';
  client.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  client.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n${'a'.repeat(10)}`);
  const serverSide = await accepted;
  // Not events.once: the body cut short is a parse error on the server's side ('error', then 'close').
  const serverClosed = new Promise((resolve) => serverSide.once('close', resolve));
  // The answer has ended (the server's half-close): the linger is armed.
  await once(client, 'end');
  return { fake, client, received: () => received, serverClosed, serverSide };
}

describe('lingerAfterEarlyAnswers', () => {
  it('after an early answer, half-closes, and closes once the body has ended', async () => {
    const { fake, client, received, serverClosed, serverSide } = await earlyAnswered();
    expect(received()).toMatch(/^HTTP\/1\.1 413 /);
    expect(received().endsWith(ANSWER)).toBe(true);
    expect([serverSide.destroyed, fake.countTimers()]).toEqual([false, 1]);
    client.write('b'.repeat(90));
    await serverClosed;
    expect([fake.countTimers(), client.writableEnded]).toEqual([0, false]);
  });

  it('closes when the client closes before its body has ended', async () => {
    const { fake, client, serverClosed } = await earlyAnswered();
    expect(fake.countTimers()).toBe(1);
    client.destroy();
    await serverClosed;
    expect(fake.countTimers()).toBe(0);
  });

  it('closes when the bound passes on its clock, the body still unfinished', async () => {
    const { fake, serverClosed, serverSide } = await earlyAnswered();
    // The bound is armed on the clock given, and nothing else ends the linger here.
    expect(fake.countTimers()).toBe(1);
    fake.tick(LINGER_MS - 1);
    expect(serverSide.destroyed).toBe(false);
    fake.tick(1);
    await serverClosed;
  });
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
