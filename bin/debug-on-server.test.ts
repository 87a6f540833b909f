import net from 'node:net';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { type DebugStreamCalls, relaySocket } from './debug-on-server.js';

const servers: net.Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

/** A loopback server whose first connection is handed to the test, and a GDB-side socket connected to it. */
async function connectedPair(): Promise<{ served: net.Socket; gdb: net.Socket }> {
  const server = net.createServer();
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address() as net.AddressInfo;
  const accepted = once(server, 'connection') as Promise<[net.Socket]>;
  const gdb = net.connect(address.port, '127.0.0.1');
  const [served] = await accepted;
  return { served, gdb };
}

describe('relaySocket', () => {
  it('closes the stream, and asks nothing more, when GDB disconnects while the stream is opening', async () => {
    const { served, gdb } = await connectedPair();
    let opened!: (stream: string) => void;
    const calls: string[] = [];
    const debug: DebugStreamCalls = {
      open: () => new Promise<string>((resolve) => (opened = resolve)),
      send: async () => void calls.push('send'),
      receive: async () => (calls.push('receive'), { text: '', closed: 'closed by the test' }),
      close: async (_jobId, stream) => void calls.push(`close ${stream}`),
    };
    const closedHere = once(served, 'close');
    const relaying = relaySocket(served, debug, 'job_1', () => undefined);
    gdb.destroy();
    await closedHere;
    opened('job_1.1');
    await relaying;
    // The close is sent after the open settles: give its promise chain its turns.
    for (let i = 0; i < 5 && calls.length === 0; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(['close job_1.1']);
  });
});
