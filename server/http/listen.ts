import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerMalformedRequest, answerUnmetExpectation } from './malformed-request.js';

/**
 * The one listen/close of both services. App factories never listen (tests start them on port 0
 * in process); the `start*Server` entry points listen through this.
 */
export interface ListeningServer {
  /** The node server, with no `request` listener yet: the caller attaches its app. */
  server: Server;
  /** The bound port (the one picked when 0 was asked for). */
  port: number;
  /** e.g. `http://127.0.0.1:41234`, IPv6 hosts in brackets. */
  origin: string;
  /** Stops accepting, drops open (keep-alive) connections, and resolves once the server has closed. */
  close(): Promise<void>;
}

export interface ListenOptions {
  /** 0 picks a free port (tests). */
  port: number;
  /** Default 127.0.0.1: exposing a service is a decision, not a default. */
  host?: string;
  /**
   * Connections open at once; one more is closed as soon as it is accepted (node's `maxConnections`),
   * so a client opening sockets without end cannot exhaust the process' file descriptors. Long polls
   * and live streams each hold one. Default `DEFAULT_MAX_CONNECTIONS`.
   */
  maxConnections?: number;
  /**
   * A request's head must have arrived this long after it began, or it is answered 408 and closed
   * (node's `headersTimeout`; its default let a stalled head hold a connection for a minute, and a
   * slow body for `requestTimeout`, 300 s, which stays: uploads). Only the receiving of a request
   * is timed: long polls and live streams, whose answer waits, are not. Default `DEFAULT_HEADERS_TIMEOUT_MS`.
   */
  headersTimeoutMs?: number;
}

export const DEFAULT_MAX_CONNECTIONS = 1024;
export const DEFAULT_HEADERS_TIMEOUT_MS = 30_000;

/** The listen options a service's start options carry (absent ones left to `listen`'s defaults). */
export function listenOptionsOf(options: Omit<ListenOptions, 'port'>): Omit<ListenOptions, 'port'> {
  return {
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(options.maxConnections !== undefined ? { maxConnections: options.maxConnections } : {}),
    ...(options.headersTimeoutMs !== undefined ? { headersTimeoutMs: options.headersTimeoutMs } : {}),
  };
}

/** Listens on `host:port` and resolves once bound; rejects (nothing left open) if binding fails. */
export async function listen(options: ListenOptions): Promise<ListeningServer> {
  const host = options.host ?? '127.0.0.1';
  const headersTimeoutMs = options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
  if (!Number.isSafeInteger(headersTimeoutMs) || headersTimeoutMs < 1) throw new RangeError(`headersTimeoutMs must be a whole number of ms above 0; got ${headersTimeoutMs}`);
  const maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  if (!Number.isSafeInteger(maxConnections) || maxConnections < 1) throw new RangeError(`maxConnections must be a whole number above 0; got ${maxConnections}`);
  const server = createServer({
    // A request without Host is refused by the apps (`requireHost`), in JSON: node's own answer has no body.
    requireHostHeader: false,
    headersTimeout: headersTimeoutMs,
    // Node checks the timeouts this often (default 30 s, which would double a 30 s bound).
    connectionsCheckingInterval: Math.max(1, Math.min(5_000, Math.floor(headersTimeoutMs / 2))),
  });
  server.maxConnections = maxConnections;
  // A request node cannot parse, or whose Expect it does not meet, is answered in the services'
  // JSON, not node's bare 400 or empty 417.
  server.on('clientError', answerMalformedRequest);
  server.on('checkExpectation', answerUnmetExpectation);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    server,
    port,
    origin: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
