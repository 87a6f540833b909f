import type http from 'node:http';
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { answerWhileStarting, listen, type ListeningServer } from './listen.js';
import { rawClient, socketClosed, turnsUntil } from '../../test/support/raw-socket-client.js';

const open: ListeningServer[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(open.splice(0).map((l) => l.close()));
});

/** A server whose `/wait` requests are held until released (long polls); anything else is answered at once. */
async function started(maxConnections: number): Promise<{ l: ListeningServer; accepted: Socket[]; held: http.ServerResponse[] }> {
  const l = await listen({ port: 0, maxConnections });
  open.push(l);
  const accepted: Socket[] = [];
  const held: http.ServerResponse[] = [];
  l.server.on('connection', (socket: Socket) => accepted.push(socket));
  l.server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (req.url === '/wait') held.push(res);
    else res.end('{"ok":true}');
  });
  return { l, accepted, held };
}

/** A raw client of `l` (`rawClient`), destroyed after each test. */
function client(l: ListeningServer): ReturnType<typeof rawClient> {
  return rawClient(l.port, sockets);
}

const closed = socketClosed;
const until = turnsUntil;

describe('connection cap', () => {
  it('lets another client in while one holds every place with stalled heads, even one that reconnects at once (slowloris)', async () => {
    const { l, accepted } = await started(20);
    let attacking = true;
    const attack = () => {
      const slow = client(l);
      slow.socket.write('GET / HTTP/1.1\r\nHost: x\r\nX-a: ');
      slow.socket.once('close', () => {
        if (attacking) attack();
      });
      return slow;
    };
    const attackers = Array.from({ length: 20 }, attack);
    await until(() => accepted.length === 20 && accepted.every((socket) => socket.bytesRead > 0));

    // The connection that waited longest for its head makes room, answered as its head timeout would answer it.
    const firstClosed = closed(attackers[0]!.socket);
    const answers = [];
    for (let k = 0; k < 3; k++) answers.push(await (await fetch(l.origin)).json());
    expect(answers).toEqual([{ ok: true }, { ok: true }, { ok: true }]);
    await firstClosed;
    expect(attackers[0]!.received()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(attackers[0]!.received().split('\r\n\r\n')[1]).toBe(JSON.stringify({ detail: 'Request Timeout' }));
    attacking = false;
  });

  it('closes an idle keep-alive connection for room, without an answer, before one that is being answered', async () => {
    const { l, accepted, held } = await started(2);
    const idle = client(l);
    idle.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(() => idle.received().includes('{"ok":true}'));
    const longPoll = client(l);
    longPoll.socket.write('GET /wait HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(() => held.length === 1);

    const idleClosed = closed(idle.socket);
    expect(await (await fetch(l.origin)).json()).toEqual({ ok: true });
    await idleClosed;
    expect(idle.received().match(/HTTP\/1\.1/g)).toHaveLength(1);
    held[0]!.end('{"waited":true}');
    await until(() => longPoll.received().includes('{"waited":true}'));
    expect(accepted).toHaveLength(3);
  });

  it('closes the newcomer at once, unanswered, when every place is being answered (long polls)', async () => {
    const { l, accepted, held } = await started(2);
    const polls = [client(l), client(l)];
    for (const poll of polls) poll.socket.write('GET /wait HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(() => held.length === 2);

    const third = client(l);
    third.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await closed(third.socket);
    expect(third.received()).toBe('');

    // Both long polls are still answered; once one has closed, a newcomer is served.
    for (const res of held) res.end('{"waited":true}');
    await until(() => polls.every((poll) => poll.received().includes('{"waited":true}')));
    const serverSide = once(accepted[0]!, 'close');
    polls[0]!.socket.destroy();
    await serverSide;
    expect(await (await fetch(l.origin)).json()).toEqual({ ok: true });
  });

  it('counts the connections open, those closed for room and the newcomers refused (listen\'s `connections`)', async () => {
    const { l, accepted, held } = await started(2);
    const polls = [client(l), client(l)];
    for (const poll of polls) poll.socket.write('GET /wait HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(() => held.length === 2);
    expect({ ...l.connections }).toEqual({ open: 2, closedForRoom: 0, refused: 0 });

    // Every place is being answered: the newcomer is refused, and holds none.
    const refused = client(l);
    await closed(refused.socket);
    expect({ ...l.connections }).toEqual({ open: 2, closedForRoom: 0, refused: 1 });

    // One poll answered waits for its next head on keep-alive: the next newcomer takes its place.
    // The newcomer is a long poll the test holds, so every connection counted is one the test owns
    // (a fetch's idle keep-alive socket would be closed by undici, or the server, after a few seconds).
    held[0]!.end('{"waited":true}');
    await until(() => polls[0]!.received().includes('{"waited":true}'));
    const evicted = closed(polls[0]!.socket);
    const newcomer = client(l);
    newcomer.socket.write('GET /wait HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(() => held.length === 3);
    await evicted;
    expect({ ...l.connections }).toEqual({ open: 2, closedForRoom: 1, refused: 1 });

    // A connection that closes gives its place back.
    held[1]!.end('{"waited":true}');
    await until(() => polls[1]!.received().includes('{"waited":true}'));
    const serverSide = closed(accepted.find((socket) => socket.remotePort === polls[1]!.socket.localPort)!);
    polls[1]!.socket.destroy();
    await serverSide;
    expect({ ...l.connections }).toEqual({ open: 1, closedForRoom: 1, refused: 1 });
  });

  it('never closes an upgraded connection for room', async () => {
    const l = await listen({ port: 0, maxConnections: 1 });
    open.push(l);
    const streams: Socket[] = [];
    answerWhileStarting(l.server, 'starting').serve({
      app: (_req, res) => res.end('{"ok":true}'),
      checkContinue: (_req, res) => res.end('{"ok":true}'),
      upgrade: (_req, socket) => {
        streams.push(socket as Socket);
        socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: tcp\r\nConnection: Upgrade\r\n\r\n');
      },
    });
    const stream = client(l);
    stream.socket.write('GET / HTTP/1.1\r\nHost: x\r\nUpgrade: tcp\r\nConnection: Upgrade\r\n\r\n');
    await until(() => stream.received().includes('101 Switching'));

    const newcomer = client(l);
    newcomer.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await closed(newcomer.socket);
    expect([newcomer.received(), streams[0]!.destroyed]).toEqual(['', false]);
    streams[0]!.destroy(); // node no longer counts it as its connection: closing the server would wait for it
  });
});
