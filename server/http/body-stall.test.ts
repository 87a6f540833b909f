import { createClock } from '@sinonjs/fake-timers';
import type http from 'node:http';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromFakeTimers } from '../../core/clock.js';
import { DEFAULT_BODY_STALL_TIMEOUT_MS, DEFAULT_MIN_BODY_BYTES_PER_SECOND } from './body-stall.js';
import { ignoredUpgrades } from './ignored-upgrade.js';
import { answerWhileStarting, type ListenOptions, listen, type ListeningServer } from './listen.js';
import { rawClient, socketClosed, turnsUntil } from '../../test/support/raw-socket-client.js';

const WINDOW_MS = 30_000;
// Checks come every sixth of the window.
const CHECK_MS = WINDOW_MS / 6;
/** The 408 body of a body cut by the pace: the rule it missed and the figures (on the fake clock). */
const tooSlow = (bytes: number, seconds: number) => JSON.stringify({ detail: `Request Timeout: the request body must come at 240 bytes a second or more; ${bytes} bytes came in the last ${seconds} s` });
const noByte = (seconds: number, rule = 'it must come at 240 bytes a second or more') => JSON.stringify({ detail: `Request Timeout: no byte of the request body came in the last ${seconds} s (${rule})` });
const FOR_ROOM = ', and its connection was needed for another client';
const open: ListeningServer[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(open.splice(0).map((l) => l.close()));
});

/**
 * A server on a fake clock whose `/read` requests read their body and are answered with its length
 * once it has ended, whose `/hold` requests read nothing until `release`d (backpressure), and
 * whose `/wait` requests are held unanswered (long polls); `heads` has every request's server side.
 */
async function started(options: Omit<ListenOptions, 'port' | 'clock'> = {}) {
  const fake = createClock(0);
  const clock = clockFromFakeTimers(fake);
  const l = await listen({ port: 0, clock, bodyStallTimeoutMs: WINDOW_MS, ...options });
  open.push(l);
  const heads: { req: http.IncomingMessage; res: http.ServerResponse }[] = [];
  const held: (() => void)[] = [];
  const continues: (() => void)[] = [];
  const app = (req: http.IncomingMessage, res: http.ServerResponse) => {
    heads.push({ req, res });
    let bytes = 0;
    const readBody = () => {
      req.on('data', (chunk: Buffer) => (bytes += chunk.length));
      req.on('end', () => res.end(JSON.stringify({ bytes })));
    };
    if (req.url === '/read') readBody();
    else if (req.url === '/hold') held.push(readBody);
  };
  // As the bench serves: a request whose Upgrade it does not take is served by the app as plain HTTP.
  const ignored = ignoredUpgrades({ clock });
  answerWhileStarting(l.server, 'starting').serve({
    app,
    // `/checked` waits for `passContinue` before its 100, as a slow credential check would.
    checkContinue: (req, res) => {
      const pass = () => {
        res.writeContinue();
        app(req, res);
      };
      if (req.url === '/checked') continues.push(pass);
      else pass();
    },
    upgrade: (req, socket, head) => ignored.serve(app, req, socket, head) });
  return { l, fake, heads, release: () => held.splice(0).forEach((read) => read()), passContinue: () => continues.splice(0).forEach((pass) => pass()), continuesHeld: () => continues.length };
}

/** A raw client of `l` (`rawClient`), destroyed after each test. */
function client(l: ListeningServer): ReturnType<typeof rawClient> {
  return rawClient(l.port, sockets);
}

const closed = socketClosed;
const until = turnsUntil;

describe('cutStalledBodies (through listen)', () => {
  it('answers 408 saying the pace it missed, with the bytes that came, and closes a body dripped slower than the pace, once a window passes, not before', async () => {
    expect([DEFAULT_BODY_STALL_TIMEOUT_MS, DEFAULT_MIN_BODY_BYTES_PER_SECOND]).toEqual([30_000, 240]);
    const { l, fake, heads } = await started();
    const slow = client(l);
    slow.socket.write('POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\na');
    await until(() => heads.length === 1);
    const serverSide = heads[0]!.req.socket;
    // A byte every check: 6 bytes a window, far below 240 a second.
    for (let k = 1; k < 6; k++) {
      slow.socket.write('b');
      const before = serverSide.bytesRead;
      await until(() => serverSide.bytesRead > before);
      fake.tick(CHECK_MS);
    }
    fake.tick(CHECK_MS - 1);
    expect(serverSide.writableEnded).toBe(false);
    fake.tick(1);
    await closed(slow.socket);
    expect(slow.received()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(slow.received()).toMatch(/\r\nConnection: close\r\n/);
    // The head and its first body byte came in one read, which the window starts after: 5 bytes.
    expect(slow.received().split('\r\n\r\n')[1]).toBe(tooSlow(5, 30));
    await until(() => serverSide.destroyed);
  });

  it('answers 408 to a body dripped on a connection whose request before was answered (the answer is the request\'s, not the connection\'s)', async () => {
    const { l, fake, heads } = await started();
    const slow = client(l);
    slow.socket.write('POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}');
    await until(() => slow.received().includes('\r\n\r\n{"bytes":2}'));
    const answered = slow.received();
    slow.socket.write('POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n');
    await until(() => heads.length === 2);
    fake.tick(WINDOW_MS);
    await closed(slow.socket);
    const second = slow.received().slice(answered.length);
    expect(second).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(second.split('\r\n\r\n')[1]).toBe(noByte(30));
  });

  it('reads no more of a body once it is answered 408: the rest sent after is never the app\'s, and the connection closes', async () => {
    const { l, fake, heads } = await started();
    const slow = client(l);
    slow.socket.write('POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n');
    await until(() => heads.length === 1);
    const { req } = heads[0]!;
    const serverSide = req.socket;
    let ended = false;
    req.on('end', () => (ended = true));
    // The close after the 408 held back (as while it waits in a full send buffer), so that the
    // rest of the body reaches the server's side before the connection is gone.
    const destroy = serverSide.destroy.bind(serverSide);
    let closing = false;
    serverSide.destroy = () => {
      closing = true;
      return serverSide;
    };
    const slowClosed = closed(slow.socket);
    fake.tick(WINDOW_MS);
    await until(() => closing);
    await new Promise((resolve) => slow.socket.write('0123456789', resolve));
    // Turns enough for the server to read what is there (it reads in one): had it read on, the app would have the whole body.
    for (let turn = 0; turn < 50 && !ended; turn++) await new Promise((resolve) => setImmediate(resolve));
    destroy();
    await slowClosed;
    expect([ended, req.complete]).toEqual([false, false]);
    expect(slow.received().split('\r\n\r\n')[1]).toBe(noByte(30));
  });

  it('never cuts an upload that keeps the pace, however many windows it takes', async () => {
    const { l, fake, heads } = await started();
    const upload = client(l);
    const chunk = 'u'.repeat(2 * DEFAULT_MIN_BODY_BYTES_PER_SECOND * (CHECK_MS / 1000));
    const checks = 4 * 6;
    upload.socket.write(`POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: ${chunk.length * checks}\r\n\r\n`);
    await until(() => heads.length === 1);
    const serverSide = heads[0]!.req.socket;
    for (let k = 0; k < checks; k++) {
      const before = serverSide.bytesRead;
      upload.socket.write(chunk);
      await until(() => serverSide.bytesRead >= before + chunk.length);
      fake.tick(CHECK_MS);
    }
    await until(() => upload.received().includes('\r\n\r\n{'));
    expect(upload.received()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(upload.received().endsWith(JSON.stringify({ bytes: chunk.length * checks }))).toBe(true);
  });

  it('does not judge a body the app is not reading (backpressure), nor a request without a body, nor one whose answer waits after its body', async () => {
    const { l, fake, heads, release } = await started();
    const held = client(l);
    const bodyBytes = 1024 * 1024;
    held.socket.write(`POST /hold HTTP/1.1\r\nHost: x\r\nContent-Length: ${bodyBytes}\r\n\r\n`);
    held.socket.write('h'.repeat(bodyBytes));
    const poll = client(l);
    poll.socket.write('GET /wait HTTP/1.1\r\nHost: x\r\n\r\n');
    const postPoll = client(l);
    postPoll.socket.write('POST /wait HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}');
    await until(() => heads.length === 3 && heads.every(({ req }) => req.url !== '/hold' || req.socket.isPaused()));
    fake.tick(10 * WINDOW_MS);
    expect(heads.map(({ req }) => req.socket.writableEnded)).toEqual([false, false, false]);
    release();
    await until(() => held.received().includes('\r\n\r\n{'));
    expect(held.received().endsWith(JSON.stringify({ bytes: bodyBytes }))).toBe(true);
  });

  it('with a pace of 0 bytes a second, cuts only a window without a byte (nginx client_body_timeout)', async () => {
    const { l, fake, heads } = await started({ minBodyBytesPerSecond: 0 });
    const slow = client(l);
    slow.socket.write('POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n');
    await until(() => heads.length === 1);
    const serverSide = heads[0]!.req.socket;
    for (let window = 0; window < 3; window++) {
      const before = serverSide.bytesRead;
      slow.socket.write('b');
      await until(() => serverSide.bytesRead > before);
      fake.tick(WINDOW_MS);
    }
    expect(serverSide.writableEnded).toBe(false);
    fake.tick(WINDOW_MS);
    await closed(slow.socket);
    expect(slow.received().split('\r\n\r\n')[1]).toBe(noByte(30, 'it must bring a byte at least every 30 s'));
  });

  it('closes, without an answer, a body that stalls after its 100 Continue', async () => {
    const { l, fake, heads } = await started();
    const slow = client(l);
    slow.socket.write('POST /read HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 100\r\n\r\n');
    await until(() => slow.received().startsWith('HTTP/1.1 100 Continue\r\n\r\n') && heads.length === 1);
    fake.tick(WINDOW_MS);
    await closed(slow.socket);
    expect(slow.received()).toBe('HTTP/1.1 100 Continue\r\n\r\n');
  });

  it('does not time a body the client holds back, as it should, until the server writes its 100 Continue', async () => {
    const { l, fake, heads, passContinue, continuesHeld } = await started();
    const waiting = client(l);
    waiting.socket.write('POST /checked HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 100\r\n\r\n');
    await until(() => continuesHeld() === 1);
    // Two windows while the server decides: the client has nothing to send yet.
    fake.tick(2 * WINDOW_MS + CHECK_MS);
    await new Promise((resolve) => setImmediate(resolve));
    expect(waiting.socket.destroyed).toBe(false);
    expect(waiting.received()).toBe('');
    passContinue();
    await until(() => waiting.received() === 'HTTP/1.1 100 Continue\r\n\r\n' && heads.length === 1);
    // From the 100 on, its body keeps the pace or the connection closes.
    fake.tick(WINDOW_MS + CHECK_MS);
    await closed(waiting.socket);
    expect(waiting.received()).toBe('HTTP/1.1 100 Continue\r\n\r\n');
  });

  it('answers 408 to the body of a request whose Upgrade is ignored (read apart from the parser of node), dripped slower than the pace', async () => {
    const { l, fake, heads } = await started();
    const slow = client(l);
    slow.socket.write('POST /read HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nContent-Length: 100\r\n\r\na');
    await until(() => heads.length === 1);
    fake.tick(WINDOW_MS);
    await closed(slow.socket);
    // Its first body byte came with the head.
    expect(slow.received().split('\r\n\r\n')[1]).toBe(noByte(30));
  });

  it('refuses a window or a pace that is not a whole number', async () => {
    await expect(listen({ port: 0, bodyStallTimeoutMs: 0 })).rejects.toThrow(/bodyStallTimeoutMs must be a whole number of ms above 0/);
    await expect(listen({ port: 0, minBodyBytesPerSecond: -1 })).rejects.toThrow(/minBodyBytesPerSecond must be a whole number of bytes, 0 or more/);
  });
});

describe('the connection cap and bodies behind their pace', () => {
  it.each([
    ['a body found behind its pace', ''],
    // An upgraded connection was otherwise never closed for room.
    ['a body behind its pace whose Upgrade was ignored', 'Connection: Upgrade\r\nUpgrade: h2c\r\n'],
  ])('lets a newcomer take the place of %s, answered 408 saying so, before its window ends', async (_what, upgrade) => {
    const { l, fake, heads } = await started({ maxConnections: 1 });
    const slow = client(l);
    slow.socket.write(`POST /read HTTP/1.1\r\nHost: x\r\n${upgrade}Content-Length: 100\r\n\r\na`);
    await until(() => heads.length === 1);
    fake.tick(CHECK_MS);
    const slowClosed = closed(slow.socket);
    expect(await (await fetch(`${l.origin}/read`)).json()).toEqual({ bytes: 0 });
    await slowClosed;
    expect(slow.received().split('\r\n\r\n')[1]).toBe(JSON.stringify({ detail: JSON.parse(noByte(5)).detail + FOR_ROOM }));
    expect(l.connections.closedForRoom).toBe(1);
  });

  it('keeps an upload that keeps its pace: the newcomer is refused, as when every place is being answered', async () => {
    const { l, fake, heads } = await started({ maxConnections: 1 });
    const upload = client(l);
    const chunk = 'u'.repeat(2 * DEFAULT_MIN_BODY_BYTES_PER_SECOND * (CHECK_MS / 1000));
    upload.socket.write(`POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: ${2 * chunk.length}\r\n\r\n`);
    await until(() => heads.length === 1);
    const serverSide = heads[0]!.req.socket;
    const before = serverSide.bytesRead;
    upload.socket.write(chunk);
    await until(() => serverSide.bytesRead >= before + chunk.length);
    fake.tick(CHECK_MS);
    const newcomer = client(l);
    newcomer.socket.write('GET /read HTTP/1.1\r\nHost: x\r\n\r\n');
    await closed(newcomer.socket);
    expect([newcomer.received(), l.connections.refused]).toEqual(['', 1]);
    upload.socket.write(chunk);
    await until(() => upload.received().includes('\r\n\r\n{'));
    expect(upload.received().endsWith(JSON.stringify({ bytes: 2 * chunk.length }))).toBe(true);
  });

  it('makes a body that caught up again no longer closable for room', async () => {
    const { l, fake, heads } = await started({ maxConnections: 1 });
    const slow = client(l);
    const chunk = 'c'.repeat(4 * DEFAULT_MIN_BODY_BYTES_PER_SECOND * (CHECK_MS / 1000));
    slow.socket.write(`POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: ${2 * chunk.length}\r\n\r\n`);
    await until(() => heads.length === 1);
    fake.tick(CHECK_MS);
    const serverSide = heads[0]!.req.socket;
    const before = serverSide.bytesRead;
    slow.socket.write(chunk);
    await until(() => serverSide.bytesRead >= before + chunk.length);
    fake.tick(CHECK_MS);
    const newcomer = client(l);
    await closed(newcomer.socket);
    expect([newcomer.received(), l.connections.refused, l.connections.closedForRoom]).toEqual(['', 1, 0]);
  });
});
