import { connect } from 'node:net';

/**
 * The whole answer to `request` on a fresh connection, read until the server closes it, for
 * requests fetch cannot send (no Host, an Upgrade, a WebSocket handshake). The request is written
 * without half-closing the socket: Node's server drops a request whose client sent FIN before its
 * asynchronous handler answered.
 */
export function rawAnswer(url: string, request: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
    socket.write(request);
  });
}

/** `rawAnswer` read as the answer's status, its head in lower case, and its body as JSON. */
export async function rawExchange(url: string, request: string): Promise<{ status: number; head: string; body: unknown }> {
  const text = await rawAnswer(url, request);
  const split = text.indexOf('\r\n\r\n');
  return { status: Number(text.slice(9, 12)), head: text.slice(0, split).toLowerCase(), body: JSON.parse(text.slice(split + 4)) as unknown };
}
