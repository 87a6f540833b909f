import WebSocket, { type RawData } from 'ws';
import { z } from 'zod';
import { debugStreamClosedSchema, debugStreamPath } from '../wire/bench/debug-schemas.js';
import { MAX_DEBUG_MESSAGE_BYTES } from '../wire/worker/debug-schemas.js';

/**
 * The bench API's debug extension as a client calls it (docs/bench-api.md, "Debugging"; decisions
 * 0560, 0625): a debug stream, a WebSocket, on a debug job (`BenchClient.armDebug` arms the session
 * first). A refusal throws `DebugRefused` with the server's status and detail.
 */
export class DebugRefused extends Error {
  override readonly name = 'DebugRefused';
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(detail);
  }
}

/** An open debug stream: GDB's bytes both ways; `onClosed` once, with why when the server said. */
export interface DebugStream {
  send(bytes: Buffer): void;
  onData(listener: (bytes: Buffer) => void): void;
  onClosed(listener: (reason: string | undefined) => void): void;
  close(): void;
}

/** The most host ms the WebSocket's opening handshake may take. */
const HANDSHAKE_MS = 30_000;

export class DebugStreamClient {
  constructor(private readonly options: { server: string; token: string }) {}

  /** Opens a debug stream on the running debug job (one debugger at a time); rejects with `DebugRefused` when the server refuses it. */
  open(jobId: string): Promise<DebugStream> {
    const url = new URL(debugStreamPath(jobId), this.options.server.replace(/\/+$/, '') + '/');
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${this.options.token}` }, maxPayload: MAX_DEBUG_MESSAGE_BYTES, perMessageDeflate: false, handshakeTimeout: HANDSHAKE_MS });
    return new Promise<DebugStream>((resolve, reject) => {
      let reason: string | undefined;
      const closedListeners: Array<(reason: string | undefined) => void> = [];
      const dataListeners: Array<(bytes: Buffer) => void> = [];
      ws.on('unexpected-response', (_req, res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk.slice(0, 16_384)));
        res.on('end', () => {
          reject(new DebugRefused(res.statusCode ?? 0, detailOf(body)));
          ws.terminate();
        });
      });
      ws.on('error', (err) => reject(err));
      ws.on('message', (data: RawData, isBinary) => {
        const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
        if (isBinary) for (const listener of dataListeners) listener(bytes);
        else {
          const closed = debugStreamClosedSchema.safeParse(parseJson(bytes.toString('utf8')));
          if (closed.success) reason = closed.data.closed;
        }
      });
      ws.once('close', () => {
        for (const listener of closedListeners.splice(0)) listener(reason);
      });
      ws.once('open', () =>
        resolve({
          send: (bytes) => ws.readyState === WebSocket.OPEN && ws.send(bytes, { binary: true }),
          onData: (listener) => void dataListeners.push(listener),
          onClosed: (listener) => (ws.readyState === WebSocket.CLOSED ? listener(reason) : void closedListeners.push(listener)),
          close: () => ws.close(1000),
        }),
      );
    });
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A refusal's `detail` (FastAPI's shape), or the body's text. */
function detailOf(body: string): string {
  const refusal = z.object({ detail: z.unknown() }).safeParse(parseJson(body));
  if (!refusal.success) return body;
  return typeof refusal.data.detail === 'string' ? refusal.data.detail : JSON.stringify(refusal.data.detail);
}
