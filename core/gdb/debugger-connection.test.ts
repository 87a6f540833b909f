import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { socketConnection } from './debugger-connection.js';

/** Both ends of one loopback TCP connection. */
async function loopbackPair(): Promise<{ server: net.Socket; client: net.Socket; close: () => void }> {
  const listener = net.createServer();
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as net.AddressInfo;
  const accepted = new Promise<net.Socket>((resolve) => listener.once('connection', resolve));
  const client = net.connect(port, '127.0.0.1');
  const server = await accepted;
  return {
    server,
    client,
    close: () => {
      client.destroy();
      server.destroy();
      listener.close();
    },
  };
}

const MiB = 1024 * 1024;

describe('socketConnection', () => {
  let close = () => {};
  afterEach(() => close());

  it('reads no more of a debugger that does not read its answers until they drain, then carries every byte', async () => {
    const pair = await loopbackPair();
    close = pair.close;
    const { server, client } = pair;
    const connection = socketConnection(server);
    const sentBytes = 16 * MiB;
    const answerPerByte = 4;
    let receivedBytes = 0;
    let mostQueuedBytes = 0;
    // Held: the answers stopped draining and reading stopped, or the whole flood was read (the failure).
    const heldOrFlooded = new Promise<'held' | 'flooded'>((resolve) => {
      connection.onData((text) => {
        receivedBytes += text.length;
        connection.write('a'.repeat(text.length * answerPerByte));
        mostQueuedBytes = Math.max(mostQueuedBytes, server.writableLength);
        if (server.isPaused()) resolve('held');
        else if (receivedBytes === sentBytes) resolve('flooded');
      });
    });
    // The debugger sends a flood and reads nothing.
    client.pause();
    const chunk = Buffer.alloc(64 * 1024, 0x2b);
    for (let sent = 0; sent < sentBytes; sent += chunk.length) client.write(chunk);

    expect(await heldOrFlooded, `the server read all ${sentBytes} bytes while its answers piled up (${mostQueuedBytes} bytes queued)`).toBe('held');
    // Queued in this process: the answers to one chunk past the high-water mark, not to the flood.
    expect(mostQueuedBytes).toBeLessThan(server.writableHighWaterMark + 64 * 1024 * answerPerByte);
    expect(receivedBytes).toBeLessThan(sentBytes);

    // The debugger reads again: everything it sent is read and answered.
    let answeredBytes = 0;
    const allAnswered = new Promise<void>((resolve) => {
      client.on('data', (data: Buffer) => {
        answeredBytes += data.length;
        if (answeredBytes === sentBytes * answerPerByte) resolve();
      });
    });
    client.resume();
    await allAnswered;
    expect(receivedBytes).toBe(sentBytes);
  });
  it('reads again once it is ended, so a held connection sees its peer leave and closes', async () => {
    const pair = await loopbackPair();
    close = pair.close;
    const { server, client } = pair;
    const connection = socketConnection(server);
    connection.onData(() => undefined);
    connection.hold(true);
    const closed = new Promise<'closed'>((resolve) => connection.onClose(() => resolve('closed')));
    // More than it buffers unread: a paused socket stops reading, and so never reads the FIN after.
    client.write(Buffer.alloc(4 * MiB, 0x2b));
    client.end();
    connection.end();
    const bound = new Promise<'still open'>((resolve) => setTimeout(() => resolve('still open'), 10_000).unref());
    expect(await Promise.race([closed, bound])).toBe('closed');
  });
});
