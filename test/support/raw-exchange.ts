import { connect } from 'node:net';

/**
 * One raw HTTP exchange on a fresh connection, for requests fetch cannot send (an Upgrade, a
 * WebSocket handshake): the request's bytes and our FIN, then everything until the server closes.
 * The answer's status, its head in lower case, and its body read as JSON.
 */
export async function rawExchange(url: string, request: string): Promise<{ status: number; head: string; body: unknown }> {
  const { hostname, port } = new URL(url);
  const text = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    socket.on('close', () => resolve(received));
    socket.on('error', reject);
    socket.end(request);
  });
  const split = text.indexOf('\r\n\r\n');
  return { status: Number(text.slice(9, 12)), head: text.slice(0, split).toLowerCase(), body: JSON.parse(text.slice(split + 4)) as unknown };
}
