import WebSocket, { type RawData } from 'ws';
import type { Clock, TimerHandle } from '../../core/clock.js';
import { MAX_DEBUG_MESSAGE_BYTES, debugDataFrame, parseDebugDataFrame, serverDebugMessageSchema, workerDebugPath } from '../../wire/worker/debug-schemas.js';
import { type DebugChannel, DebugChannelRefused, type DebugChannelHandlers } from './worker-link.js';

/** A connection that hears nothing from the server this long (host ms; the server pings every 20 s) is dead: dropped, and dialled again. */
export const DEBUG_CHANNEL_SILENCE_MS = 60_000;
/** The most host ms the WebSocket's opening handshake may take. */
const HANDSHAKE_MS = 30_000;

export interface DebugChannelOptions {
  serverUrl: string;
  /** The worker token. */
  token: string;
  jobId: string;
  clock: Clock;
  handlers: DebugChannelHandlers;
}

/**
 * A remote worker's debug channel for one job (decision 0625): a WebSocket it dials to the server
 * (`GET /api/v1/worker/jobs/{job_id}/debug`, wire/worker/debug-schemas.ts). Resolves once open;
 * rejects with `DebugChannelRefused` when the server answers 404/409 (the job is not this worker's
 * debug job there), with another error when it could not be reached.
 */
export function connectDebugChannel(options: DebugChannelOptions): Promise<DebugChannel> {
  const { handlers, clock } = options;
  const url = new URL(workerDebugPath(options.jobId), options.serverUrl.replace(/\/+$/, '') + '/');
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${options.token}` }, maxPayload: MAX_DEBUG_MESSAGE_BYTES, perMessageDeflate: false, handshakeTimeout: HANDSHAKE_MS });
  return new Promise<DebugChannel>((resolve, reject) => {
    let open = false;
    let over = false;
    let silence: TimerHandle | undefined;
    const heard = () => {
      if (silence !== undefined) clock.clearTimeout(silence);
      silence = clock.setTimeout(() => ws.terminate(), DEBUG_CHANNEL_SILENCE_MS);
    };
    const finish = (how: 'ended' | 'dropped', reason: string) => {
      if (over) return;
      over = true;
      if (silence !== undefined) clock.clearTimeout(silence);
      if (how === 'ended') handlers.ended(reason);
      else handlers.dropped(reason);
    };
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk.slice(0, 4096)));
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        const message = `the bench server refused the debug channel of job ${options.jobId}: ${status} ${body}`;
        reject(status === 404 || status === 409 ? new DebugChannelRefused(message) : new Error(message));
        ws.terminate();
      });
    });
    ws.on('error', (err) => {
      if (!open) reject(err);
    });
    ws.on('open', () => {
      open = true;
      heard();
      resolve({
        data: (stream, text) => ws.readyState === WebSocket.OPEN && ws.send(debugDataFrame(stream, Buffer.from(text, 'latin1')), { binary: true }),
        close: (stream, reason) => ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify({ kind: 'close', stream, reason: reason.slice(0, 2000) })),
        end: () => {
          over = true;
          if (silence !== undefined) clock.clearTimeout(silence);
          ws.close(1000);
        },
      });
    });
    ws.on('ping', heard);
    ws.on('message', (data: RawData, isBinary) => {
      heard();
      const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
      if (isBinary) {
        const frame = parseDebugDataFrame(bytes);
        if (frame) handlers.data(frame.stream, frame.bytes.toString('latin1'));
        return;
      }
      const parsed = serverDebugMessageSchema.safeParse(parseJson(bytes.toString('utf8')));
      if (!parsed.success) return;
      const message = parsed.data;
      if (message.kind === 'open') handlers.open(message.stream);
      else if (message.kind === 'close') handlers.close(message.stream, message.reason);
      else finish('ended', message.reason);
    });
    ws.on('close', (code) => {
      if (open) finish('dropped', `the connection closed (code ${code})`);
    });
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
