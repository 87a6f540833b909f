import net from 'node:net';
import type { Clock } from '../core/clock.js';
import { waitUntil, WaitTimeoutError } from '../core/wait.js';
import { BackendError, type GdbStream } from './backend.js';

/** A GDB stream over a connected socket to an engine's own GDB server (QEMU's gdbstub, Renode's, OpenOCD's, probe-rs's). */
export function socketGdbStream(socket: net.Socket): GdbStream {
  socket.setNoDelay?.(true);
  const closed = new Promise<{ reason: string }>((resolve) => {
    let why = 'the GDB server closed the connection';
    socket.on('error', (err) => (why = `the GDB server's connection failed: ${err.message}`));
    socket.once('close', () => resolve({ reason: why }));
  });
  return {
    write: (text) => {
      if (!socket.destroyed) socket.write(Buffer.from(text, 'latin1'));
    },
    onData: (listener) => {
      const onData = (data: Buffer) => listener(data.toString('latin1'));
      socket.on('data', onData);
      return () => socket.off('data', onData);
    },
    closed,
    close: async () => {
      socket.destroy();
      await closed;
    },
  };
}

/**
 * Connects to a GDB server that is still starting (its socket appears shortly after the process
 * starts), retrying every `pollMs` for at most `timeoutMs` on `clock`. Throws `BackendError`
 * ('timeout') naming the address and what the tool printed last.
 */
export async function connectGdbServer(
  address: { path: string } | { host: string; port: number },
  options: { clock: Clock; timeoutMs: number; pollMs?: number; what: string; outputTail?: () => string; signal?: AbortSignal },
): Promise<net.Socket> {
  let lastError = '';
  const attempt = () =>
    new Promise<net.Socket | undefined>((resolve) => {
      const socket = net.createConnection(address);
      socket.once('connect', () => {
        socket.removeAllListeners('error');
        resolve(socket);
      });
      socket.once('error', (err) => {
        lastError = err.message;
        resolve(undefined);
      });
    });
  const where = 'path' in address ? address.path : `${address.host}:${address.port}`;
  try {
    return await waitUntil(options.clock, attempt, {
      timeoutMs: options.timeoutMs,
      pollMs: options.pollMs ?? 20,
      describe: `${options.what}'s GDB server at ${where}`,
      lastSeen: () => [lastError, options.outputTail?.() ?? ''].filter(Boolean).join('; '),
      signal: options.signal,
    });
  } catch (err) {
    if (err instanceof WaitTimeoutError) throw new BackendError('timeout', err.message, { outputTail: options.outputTail?.() });
    throw err;
  }
}
