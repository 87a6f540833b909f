import http, { type IncomingMessage } from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../../../core/clock.js';
import { DEBUGGER_KEEPALIVE_IDLE_MS } from '../../../core/gdb/debugger-connection.js';
import { forwardUpgrade, originForm } from './debug-forward.js';

/** Listens on a free loopback port; its port and close. */
async function listening(server: net.Server): Promise<{ port: number; close: () => Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return { port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('forwardUpgrade: a splice to the replica holding the debug streams', () => {
  afterEach(() => vi.restoreAllMocks());

  it('turns TCP keepalive on for both legs, so a replica or client that vanishes without closing ends the splice', async () => {
    const keepAlive = vi.spyOn(net.Socket.prototype, 'setKeepAlive');
    // The holding replica: answers the upgrade with 101 and keeps the connection.
    const heldSockets: net.Socket[] = [];
    const replicaServer = http.createServer();
    const asked: string[] = [];
    replicaServer.on('upgrade', (upgradeReq: IncomingMessage, socket: net.Socket) => {
      asked.push(upgradeReq.url ?? '');
      heldSockets.push(socket);
      socket.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: tcp\r\nconnection: Upgrade\r\n\r\n');
    });
    const replica = await listening(replicaServer);
    // The debugger's side: a connection this replica received.
    let acceptor: (socket: net.Socket) => void = () => undefined;
    const clientSide = new Promise<net.Socket>((resolve) => (acceptor = resolve));
    const front = await listening(net.createServer((socket) => acceptor(socket)));
    const client = net.createConnection({ port: front.port, host: '127.0.0.1' });
    const socket = await clientSide;
    try {
      // An absolute-form target naming another host (port 1, refused) still goes to the holding replica, in origin form.
      const req = { url: 'http://127.0.0.1:1/api/v1/debug/x', method: 'GET', headers: { upgrade: 'tcp', connection: 'Upgrade' } } as unknown as IncomingMessage;
      await forwardUpgrade(req, socket, Buffer.alloc(0), { replicaUrl: `http://127.0.0.1:${replica.port}`, clock: systemClock });
      const legs = keepAlive.mock.contexts.filter((_, i) => keepAlive.mock.calls[i]![0] === true && keepAlive.mock.calls[i]![1] === DEBUGGER_KEEPALIVE_IDLE_MS);
      expect(legs).toContain(socket);
      expect(legs.filter((leg) => leg !== socket)).toHaveLength(1);
      expect(asked).toEqual(['/api/v1/debug/x']);
    } finally {
      client.destroy();
      socket.destroy();
      for (const held of heldSockets) held.destroy();
      await front.close();
      await replica.close();
    }
  });

  it('originForm drops an absolute-form target\'s scheme and authority, and leaves an origin-form one as sent', () => {
    const form = (url: string) => originForm({ url } as IncomingMessage);
    expect(form('http://evil.example:8080/api/v1/jobs/j/debug?x=1')).toBe('/api/v1/jobs/j/debug?x=1');
    expect(form('HTTPS://h')).toBe('/');
    expect(form('/api/v1/jobs/j/debug')).toBe('/api/v1/jobs/j/debug');
    expect(form('//evil/api/v1/jobs/j/debug')).toBe('//evil/api/v1/jobs/j/debug');
  });
});
