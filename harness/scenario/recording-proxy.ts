import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../../core/clock.js';

/**
 * The recorder's reverse proxy (docs/scenarios.md, "Recording"): listens on loopback in front of a
 * bench service (and a relay under `/relay`), forwards every request unchanged, and keeps each
 * exchange for `scenarioFromRecording`. It never rewrites answers: the agent sees the real service.
 */

/** One request and its answer, as the proxy saw them. */
export interface RecordedExchange {
  /** Host milliseconds on the recorder's clock when the request arrived. */
  atMs: number;
  service: 'bench' | 'relay';
  method: string;
  /** Path and query on the service (without the proxy's `/relay` prefix). */
  path: string;
  requestHeaders: Record<string, string>;
  requestBody: Uint8Array;
  status: number;
  responseHeaders: Record<string, string>;
  responseBody: Uint8Array;
}

export interface RecordingProxyOptions {
  /** Bench service base URL, e.g. http://127.0.0.1:8080. */
  benchTarget: string;
  /** Relay service base URL; served under `/relay` on the proxy. */
  relayTarget?: string;
  /** 0 picks a free port. */
  port: number;
  /** Loopback only by default: the proxy sees every token in clear. */
  host?: string;
  clock: Clock;
  /** Largest request body forwarded (bytes); larger ones are refused with 413 and not recorded. */
  maxBodyBytes?: number;
  fetch?: typeof fetch;
}

export interface RunningRecordingProxy {
  /** Use this instead of the bench URL. */
  url: string;
  /** Use this instead of the relay URL (when a relay target was given). */
  relayUrl: string | undefined;
  /** Everything recorded so far, in arrival order. */
  exchanges(): RecordedExchange[];
  close(): Promise<void>;
}

/** Hop-by-hop headers (RFC 9110 section 7.6.1) and those fetch recomputes. */
const dropHeaders = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'host', 'content-length', 'content-encoding']);

const RELAY_PREFIX = '/relay';

async function readBody(req: IncomingMessage, maxBytes: number): Promise<Uint8Array | undefined> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) return undefined;
    parts.push(chunk as Buffer);
  }
  return new Uint8Array(Buffer.concat(parts));
}

/** Starts the proxy. Exchanges are recorded only once their answer is complete. */
export async function startRecordingProxy(options: RecordingProxyOptions): Promise<RunningRecordingProxy> {
  const recorded: RecordedExchange[] = [];
  const maxBodyBytes = options.maxBodyBytes ?? 32 * 1024 * 1024;
  const fetchFn = options.fetch ?? fetch;
  const bench = options.benchTarget.replace(/\/+$/, '');
  const relay = options.relayTarget?.replace(/\/+$/, '');

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const atMs = options.clock.nowMs();
    const rawPath = req.url ?? '/';
    const isRelay = relay !== undefined && (rawPath === RELAY_PREFIX || rawPath.startsWith(`${RELAY_PREFIX}/`) || rawPath.startsWith(`${RELAY_PREFIX}?`));
    const service = isRelay ? 'relay' : 'bench';
    const path = isRelay ? rawPath.slice(RELAY_PREFIX.length) || '/' : rawPath;
    const body = await readBody(req, maxBodyBytes);
    if (!body) {
      res.writeHead(413, { 'content-type': 'application/json', connection: 'close' });
      res.end(JSON.stringify({ detail: `recording proxy: request body over ${maxBodyBytes} bytes` }));
      return;
    }
    const requestHeaders: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (v === undefined || dropHeaders.has(k)) continue;
      requestHeaders[k] = Array.isArray(v) ? v.join(', ') : v;
    }
    const method = req.method ?? 'GET';
    let answer: Response;
    try {
      answer = await fetchFn((isRelay ? relay : bench) + path, {
        method,
        headers: requestHeaders,
        ...(method === 'GET' || method === 'HEAD' ? {} : { body }),
        redirect: 'manual',
      });
    } catch (err) {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ detail: `recording proxy: ${service} service unreachable: ${(err as Error).message}` }));
      return;
    }
    const responseBody = new Uint8Array(await answer.arrayBuffer());
    const responseHeaders: Record<string, string> = {};
    answer.headers.forEach((value, key) => {
      if (!dropHeaders.has(key)) responseHeaders[key] = value;
    });
    recorded.push({ atMs, service, method, path, requestHeaders, requestBody: body, status: answer.status, responseHeaders, responseBody });
    res.writeHead(answer.status, responseHeaders);
    res.end(Buffer.from(responseBody));
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ detail: `recording proxy failed: ${(err as Error).message}` }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host ?? '127.0.0.1';
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    url,
    relayUrl: relay === undefined ? undefined : url + RELAY_PREFIX,
    exchanges: () => [...recorded],
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
