import { type Socket, connect } from 'node:net';

/**
 * A raw TCP client of a test server on 127.0.0.1 that records what it received, for the connection
 * cap's and the body pace's tests (slow heads and bodies fetch cannot send). Each socket is pushed
 * on `opened`, which the test file destroys after each test.
 */
export function rawClient(port: number, opened: Socket[]): { socket: Socket; received: () => string } {
  const socket = connect(port, '127.0.0.1');
  opened.push(socket);
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.on('error', () => {}); // a reset is one way of being closed
  return { socket, received: () => text };
}

/** Resolves once `socket` closed, however (events.once rejects on the reset that may come with it). */
export function socketClosed(socket: Socket): Promise<unknown> {
  return new Promise((resolve) => socket.once('close', resolve));
}

/** Turns of the event loop until `done` (a server reading bytes has no event of its own); bounded by the test's timeout. */
export async function turnsUntil(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setImmediate(resolve));
}
