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
}

/** Listens on `host:port` and resolves once bound; rejects (nothing left open) if binding fails. */
export async function listen(options: ListenOptions): Promise<ListeningServer> {
  const host = options.host ?? '127.0.0.1';
  // A request without Host is refused by the apps (`requireHost`), in JSON: node's own answer has no body.
  const server = createServer({ requireHostHeader: false });
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
