import net from 'node:net';
import { type RawData, WebSocket, WebSocketServer } from 'ws';

/**
 * Pipes that carry bytes as WebSocket messages (the `ws` package, as decision 0625's path does) and
 * do nothing else: the remote GDB bench's floor of the WebSocket hops with nothing of hilbench in
 * them (decision 0910). Each listens on 127.0.0.1, a free port; `close` ends it.
 */
export interface Pipe {
  port: number;
  close(): Promise<void>;
}

/** A WebSocket client to `ws://127.0.0.1:<port>` whose sends wait for its opening. */
function dial(port: number): { send: (bytes: Buffer) => void; ws: WebSocket } {
  const ws = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: false });
  const early: Buffer[] = [];
  ws.once('open', () => {
    for (const bytes of early.splice(0)) ws.send(bytes, { binary: true });
  });
  ws.on('error', () => undefined);
  return { ws, send: (bytes) => (ws.readyState === WebSocket.OPEN ? ws.send(bytes, { binary: true }) : void early.push(bytes)) };
}

const bytesOf = (data: RawData) => (Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data));

/** A TCP port whose connections each ride a WebSocket to `wsPort` (as `hilbench debug --server`'s CLI does). */
export async function tcpToWebSocket(wsPort: number): Promise<Pipe> {
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    socket.on('error', () => undefined);
    const upstream = dial(wsPort);
    socket.on('data', (data: Buffer) => upstream.send(data));
    upstream.ws.on('message', (data) => socket.write(bytesOf(data)));
    socket.once('close', () => upstream.ws.terminate());
    upstream.ws.once('close', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return { port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** A WebSocket server whose connections each ride a WebSocket to `wsPort` (as the lab server relays between the CLI and the worker). */
export async function webSocketToWebSocket(wsPort: number): Promise<Pipe> {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false });
  await new Promise((resolve) => server.once('listening', resolve));
  server.on('connection', (ws) => {
    ws.on('error', () => undefined);
    const upstream = dial(wsPort);
    ws.on('message', (data) => upstream.send(bytesOf(data)));
    upstream.ws.on('message', (data) => ws.send(bytesOf(data), { binary: true }));
    ws.once('close', () => upstream.ws.terminate());
    upstream.ws.once('close', () => ws.terminate());
  });
  const { port } = server.address() as net.AddressInfo;
  return { port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** A WebSocket server whose connections each get a TCP connection to `tcpPort` (as the worker takes a relayed stream to the device's). */
export async function webSocketToTcp(tcpPort: number): Promise<Pipe> {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false });
  await new Promise((resolve) => server.once('listening', resolve));
  server.on('connection', (ws) => {
    ws.on('error', () => undefined);
    const target = net.createConnection({ port: tcpPort, host: '127.0.0.1' });
    target.setNoDelay(true);
    target.on('error', () => undefined);
    target.on('data', (data: Buffer) => ws.send(data, { binary: true }));
    ws.on('message', (data) => target.write(bytesOf(data)));
    ws.once('close', () => target.destroy());
    target.once('close', () => ws.terminate());
  });
  const { port } = server.address() as net.AddressInfo;
  return { port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
