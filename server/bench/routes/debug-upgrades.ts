import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type RawData, WebSocket, WebSocketServer } from 'ws';
import type { Clock, TimerHandle } from '../../../core/clock.js';
import { MAX_DEBUG_MESSAGE_BYTES, debugDataFrame, parseDebugDataFrame, workerDebugMessageSchema } from '../../../wire/worker/debug-schemas.js';
import type { Logger } from '../../http/logger.js';
import { HttpError } from '../../http/http-error.js';
import { lingerThenClose } from '../../http/ignored-upgrade.js';
import type { AgentRecord } from '../../storage/bench/bench-store.js';
import type { WorkerRecord } from '../../storage/bench/worker-registry.js';
import { toHttpError } from './bench-error-http.js';
import { FORWARDED_HEADER, forwardUpgrade } from './debug-forward.js';
import { websocketHandshakeRefusal } from './websocket-handshake.js';
import type { DebugRelay } from '../domain/debug-relay.js';

/** How often each debug WebSocket is pinged (host ms); one that has not answered the previous ping by the next is gone (a vanished host sends no close). */
export const DEBUG_PING_MS = 20_000;

const AGENT_PATH = /^\/api\/v1\/jobs\/([^/?]+)\/debug(?:\?.*)?$/;
const WORKER_PATH = /^\/api\/v1\/worker\/jobs\/([^/?]+)\/debug(?:\?.*)?$/;

export interface DebugUpgradeDeps {
  relay: DebugRelay;
  clock: Clock;
  logger: Logger;
  /** The agent a bearer header names; throws the bench's refusal. */
  authenticateAgent(header: string | undefined): Promise<AgentRecord>;
  /** The worker a bearer header names; throws the bench's refusal. */
  authenticateWorker(header: string | undefined): Promise<WorkerRecord>;
  /** Renews the agent's session while its debugger is attached. */
  renewSession(agent: AgentRecord, sessionId: string): Promise<unknown>;
}

/**
 * The HTTP server's `upgrade` listener for the debug WebSockets (decision 0625): an agent's
 * debugger stream on `/api/v1/jobs/{job_id}/debug` and a worker's channel on
 * `/api/v1/worker/jobs/{job_id}/debug`, each authenticated by its bearer token and refused, before
 * the upgrade, with the bench's ordinary answers. The relay splices them. `close()` ends every one.
 */
export function debugUpgrades(deps: DebugUpgradeDeps): { upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void; close: () => void } {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_DEBUG_MESSAGE_BYTES, perMessageDeflate: false });
  /** The streams forwarded to another replica (decision 0663), ended on close: an upgraded socket would keep the server from closing. */
  const spliced = new Set<() => void>();
  /** Refused upgrades lingering until their client closes (node's timeouts no longer watch an upgraded socket): destroyed on close. */
  const refused = new Set<Duplex>();
  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => undefined);
    const url = req.url ?? '';
    const agentPath = AGENT_PATH.exec(url);
    const workerPath = WORKER_PATH.exec(url);
    // Decoded inside the promise: a path that is not valid percent-encoding (`%E0`) throws a
    // URIError, which thrown here, in the listener, would end the process. It answers 404, as the
    // router's answer to the same path does (server/http/error-handler.ts).
    const handled = Promise.resolve().then(() => {
      const notAHandshake = agentPath || workerPath ? websocketHandshakeRefusal(req) : undefined;
      if (notAHandshake) throw notAHandshake;
      if (agentPath) return agentStream(decodeURIComponent(agentPath[1]!));
      if (workerPath) return workerChannel(decodeURIComponent(workerPath[1]!));
      throw new HttpError(404, 'Not Found');
    }).catch((err: unknown) => {
      throw err instanceof URIError ? new HttpError(404, 'Not Found') : err;
    });
    handled.catch((err: unknown) => {
      refused.add(socket);
      socket.once('close', () => refused.delete(socket));
      refuse(socket, err, deps.logger, deps.clock);
    });

    /** True when the job's streams are another replica's and the upgrade went there (decision 0663); a 503 when they cannot. */
    async function forwarded(jobId: string, who: { agentId: string } | { workerId: string }): Promise<boolean> {
      const place = await deps.relay.place(jobId, who, { forwarded: req.headers[FORWARDED_HEADER] !== undefined });
      if (place.kind === 'here') return false;
      if (place.kind === 'unreachable') throw new HttpError(503, place.why);
      await forwardUpgrade(req, socket, head, { replicaUrl: place.replicaUrl, from: deps.relay.replicaUrl ?? 'a replica without --replica-url', clock: deps.clock, spliced });
      return true;
    }

    async function agentStream(jobId: string): Promise<void> {
      const agent = await deps.authenticateAgent(req.headers.authorization);
      if (await forwarded(jobId, { agentId: agent.agentId })) return;
      const opened = await deps.relay.open(agent.agentId, jobId);
      let upgraded = false;
      // A connection gone before its upgrade completed must still free the job's one debugger place.
      socket.once('close', () => upgraded || opened.close("the debugger's connection closed before its WebSocket opened"));
      wss.handleUpgrade(req, socket, head, (ws) => {
        upgraded = true;
        const heard = () => {
          const due = opened.heard();
          if (due) void deps.renewSession(agent, due).catch(() => undefined);
        };
        const endPings = pingUntilGone(ws, deps.clock, heard);
        ws.on('message', (data, isBinary) => {
          heard();
          if (isBinary) opened.send(bytesOf(data));
          else opened.close("the debugger's client sent a text message: GDB's bytes go in binary messages");
        });
        ws.on('error', () => undefined);
        ws.once('close', () => {
          endPings();
          opened.close('the debugger closed the stream');
        });
        opened.attach({
          data: (bytes) => ws.send(bytes, { binary: true }),
          closed: (reason, { protocol }) => {
            ws.send(JSON.stringify({ closed: reason }));
            ws.close(protocol ? 1008 : 1000);
          },
          get bufferedBytes() {
            return ws.bufferedAmount;
          },
        });
      });
    }

    async function workerChannel(jobId: string): Promise<void> {
      const worker = await deps.authenticateWorker(req.headers.authorization);
      if (!deps.relay.holds(worker.workerId, jobId)) {
        if (await forwarded(jobId, { workerId: worker.workerId })) return;
        throw new HttpError(404, `no running debug job ${jobId} of this worker is served here (it ended, or the replica that handed it out restarted since)`);
      }
      wss.handleUpgrade(req, socket, head, (ws) => {
        const endPings = pingUntilGone(ws, deps.clock, () => undefined);
        const send = (message: object) => ws.send(JSON.stringify(message));
        const connected = deps.relay.connectWorker(worker.workerId, jobId, {
          open: (stream) => send({ kind: 'open', stream }),
          data: (stream, bytes) => ws.send(debugDataFrame(stream, bytes), { binary: true }),
          close: (stream, reason) => send({ kind: 'close', stream, reason }),
          ended: (reason) => {
            send({ kind: 'ended', reason });
            ws.close(1000);
          },
          replaced: () => ws.terminate(),
          get bufferedBytes() {
            return ws.bufferedAmount;
          },
        });
        if (!connected) {
          send({ kind: 'ended', reason: `job ${jobId} is no longer a debug job here` });
          ws.close(1000);
          endPings();
          return;
        }
        ws.on('message', (data, isBinary) => {
          const frame = isBinary ? parseDebugDataFrame(bytesOf(data)) : undefined;
          if (frame) return connected.data(frame.stream, frame.bytes);
          const message = isBinary ? undefined : workerDebugMessageSchema.safeParse(parseJson(bytesOf(data).toString('utf8')));
          if (message?.success) return connected.close(message.data.stream, message.data.reason);
          deps.logger.warn(`worker ${worker.workerId} sent a debug message for job ${jobId} that is not the protocol's; its channel is closed`);
          ws.close(1008);
        });
        ws.on('error', () => undefined);
        ws.once('close', () => {
          endPings();
          connected.disconnected();
        });
      });
    }
  };
  return {
    upgrade,
    close: () => {
      deps.relay.shutdown();
      for (const ws of wss.clients) ws.terminate();
      for (const end of [...spliced]) end();
      for (const socket of [...refused]) socket.destroy();
      wss.close();
    },
  };
}

/** Pings `ws` every `DEBUG_PING_MS` of `clock`; one that did not answer the previous ping is terminated. Returns the stop. */
function pingUntilGone(ws: WebSocket, clock: Clock, onPong: () => void): () => void {
  let answered = true;
  let timer: TimerHandle | undefined;
  ws.on('pong', () => {
    answered = true;
    onPong();
  });
  const tick = () => {
    if (!answered) {
      ws.terminate();
      return;
    }
    answered = false;
    if (ws.readyState === WebSocket.OPEN) ws.ping();
    timer = clock.setTimeout(tick, DEBUG_PING_MS);
  };
  timer = clock.setTimeout(tick, DEBUG_PING_MS);
  return () => {
    if (timer !== undefined) clock.clearTimeout(timer);
    timer = undefined;
  };
}

function bytesOf(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Answers a refused upgrade as the bench answers any request (`{"detail"}`, its status and headers)
 * and closes the connection once the client has read it (what it still sends is read and dropped,
 * so a body it sends, a POST's, does not reset the answer away).
 */
function refuse(socket: Duplex, err: unknown, logger: Logger, clock: Clock): void {
  const mapped = toHttpError(err);
  const known = mapped instanceof HttpError;
  if (!known) logger.error('a debug WebSocket upgrade failed', err);
  const status = known ? mapped.status : 500;
  const body = JSON.stringify({ detail: known ? mapped.detail : 'Internal Server Error' });
  const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close', ...(known ? mapped.headers : {}) };
  if (!socket.writable) return void socket.destroy();
  socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${body}`);
  lingerThenClose(socket as Socket, clock);
}
