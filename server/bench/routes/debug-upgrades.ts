import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Clock } from '../../../core/clock.js';
import { DEBUG_LEG_HOLD_MS } from '../../../wire/worker/debug-schemas.js';
import type { Logger } from '../../http/logger.js';
import { HttpError } from '../../http/http-error.js';
import { lingerThenClose } from '../../http/ignored-upgrade.js';
import type { AgentRecord } from '../../storage/bench/bench-store.js';
import type { WorkerRecord } from '../../storage/bench/worker-registry.js';
import { toHttpError } from './bench-error-http.js';
import { FORWARDED_HEADER, FORWARD_ANSWER_MS, forwardUpgrade, originForm } from './debug-forward.js';
import { spliceDebugStream } from './debug-splice.js';
import { tcpUpgradeRefusal } from './tcp-upgrade-handshake.js';
import { DEBUGGER_WAIT_MS, type DebugRelay, SESSION_RENEW_MS } from '../domain/debug-relay.js';

const AGENT_PATH = /^\/api\/v1\/jobs\/([^/?]+)\/debug(?:\?.*)?$/;
const WORKER_PATH = /^\/api\/v1\/worker\/jobs\/([^/?]+)\/debug(?:\?.*)?$/;

/** The answer that switches a debug path's connection to raw bytes (RFC 9110 section 7.8). */
const SWITCHING = 'HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: tcp\r\n\r\n';

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

/** True when `req` is for a debug stream's path: its upgrade (any protocol) is answered by `debugUpgrades`. */
export function isDebugPath(req: IncomingMessage): boolean {
  const url = originForm(req);
  return AGENT_PATH.test(url) || WORKER_PATH.test(url);
}

/**
 * The HTTP server's `upgrade` listener for the debug streams (decision 0910): an agent's debugger
 * on `/api/v1/jobs/{job_id}/debug` and a worker's leg on `/api/v1/worker/jobs/{job_id}/debug`,
 * each `Upgrade: tcp`, authenticated by its bearer token and refused, before the upgrade, with the
 * bench's ordinary answers. A worker's leg is held until a debugger comes (then 101) or for
 * `DEBUG_LEG_HOLD_MS` (then 204, dial again); a debugger is answered 101 once its worker's leg is
 * paired with it, and the two connections are spliced (debug-splice.ts). `close()` ends every one.
 */
export function debugUpgrades(deps: DebugUpgradeDeps): { takes: (req: IncomingMessage) => boolean; upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void; close: () => void } {
  /** The streams spliced here or forwarded to another replica (decision 0663), ended on close: an upgraded socket would keep the server from closing. */
  const spliced = new Set<() => void>();
  /** Answered upgrades lingering until their client closes (node's timeouts no longer watch an upgraded socket), and held legs: destroyed on close. */
  const lingering = new Set<Duplex>();
  const linger = (socket: Duplex) => {
    lingering.add(socket);
    socket.once('close', () => lingering.delete(socket));
  };
  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => undefined);
    const url = originForm(req);
    const agentPath = AGENT_PATH.exec(url);
    const workerPath = WORKER_PATH.exec(url);
    // Decoded inside the promise: a path that is not valid percent-encoding (`%E0`) throws a
    // URIError, which thrown here, in the listener, would end the process. It answers 404, as the
    // router's answer to the same path does (server/http/error-handler.ts).
    const handled = Promise.resolve().then(() => {
      const notAnUpgrade = agentPath || workerPath ? tcpUpgradeRefusal(req) : undefined;
      if (notAnUpgrade) throw notAnUpgrade;
      if (agentPath) return agentStream(decodeURIComponent(agentPath[1]!));
      if (workerPath) return workerLeg(decodeURIComponent(workerPath[1]!));
      throw new HttpError(404, 'Not Found');
    }).catch((err: unknown) => {
      throw err instanceof URIError ? new HttpError(404, 'Not Found') : err;
    });
    handled.catch((err: unknown) => {
      linger(socket);
      refuse(socket, err, deps.logger, deps.clock);
    });

    /** True when the job's streams are another replica's and the upgrade went there (decision 0663); a 503 when they cannot. */
    async function forwarded(jobId: string, who: { agentId: string } | { workerId: string }, answerMs: number): Promise<boolean> {
      const place = await deps.relay.place(jobId, who, { forwarded: req.headers[FORWARDED_HEADER] !== undefined });
      if (place.kind === 'here') return false;
      if (place.kind === 'unreachable') throw new HttpError(503, place.why);
      await forwardUpgrade(req, socket, head, { replicaUrl: place.replicaUrl, from: deps.relay.replicaUrl ?? 'a replica without --replica-url', clock: deps.clock, spliced, answerMs });
      return true;
    }

    async function agentStream(jobId: string): Promise<void> {
      const agent = await deps.authenticateAgent(req.headers.authorization);
      // The holding replica may wait for its worker's leg as long as its own bound, then answer.
      if (await forwarded(jobId, { agentId: agent.agentId }, DEBUGGER_WAIT_MS + FORWARD_ANSWER_MS)) return;
      const opened = await deps.relay.open(agent.agentId, jobId);
      // A connection gone before its worker's leg came frees the job's one debugger place.
      const gone = () => opened.close();
      socket.once('close', gone);
      let worker: Duplex;
      try {
        worker = await opened.worker;
      } finally {
        socket.off('close', gone);
      }
      if (socket.destroyed) {
        opened.close();
        worker.destroy();
        return;
      }
      socket.write(SWITCHING);
      if (head.length > 0) worker.write(head);
      const splice = spliceDebugStream(socket, worker, { clock: deps.clock });
      const end = () => splice.end('the bench server is shutting down');
      spliced.add(end);
      opened.onEnd((reason) => splice.end(reason));
      // The session stays alive while the debugger is attached, silent or not (a person thinking
      // sends nothing, and nothing pings a raw stream): renewed on the clock while it is open.
      let renewal = deps.clock.setTimeout(function renew() {
        const due = opened.renewDue();
        if (due) void deps.renewSession(agent, due).catch(() => undefined);
        renewal = deps.clock.setTimeout(renew, SESSION_RENEW_MS);
      }, SESSION_RENEW_MS);
      void splice.closed.then(() => {
        deps.clock.clearTimeout(renewal);
        spliced.delete(end);
        opened.close();
      });
    }

    async function workerLeg(jobId: string): Promise<void> {
      const worker = await deps.authenticateWorker(req.headers.authorization);
      const notHere = () => new HttpError(404, `no running debug job ${jobId} of this worker is served here (it ended, or the replica that handed it out restarted since)`);
      if (!deps.relay.holds(worker.workerId, jobId)) {
        if (await forwarded(jobId, { workerId: worker.workerId }, DEBUG_LEG_HOLD_MS + FORWARD_ANSWER_MS)) return;
        throw notHere();
      }
      let answered = false;
      const unpark = deps.relay.parkWorker(worker.workerId, jobId, {
        take: () => {
          answered = true;
          lingering.delete(socket);
          socket.write(SWITCHING);
          if (head.length > 0) socket.unshift(head);
          return socket;
        },
        release: (answer) => {
          answered = true;
          if (answer.kind === 'ended') refuse(socket, notHere(), deps.logger, deps.clock);
          else answerNoContent(socket, answer.reason, deps.clock);
        },
      });
      if (!unpark) throw notHere();
      if (answered) return;
      // Held: closed on close (the relay's shutdown answers it first), and unparked if the worker goes.
      linger(socket);
      socket.once('close', () => answered || unpark());
    }
  };
  return {
    takes: isDebugPath,
    upgrade,
    close: () => {
      deps.relay.shutdown();
      for (const end of [...spliced]) end();
      for (const socket of [...lingering]) socket.destroy();
    },
  };
}

/** Answers a held leg 204 (dial again), saying why in a header, and closes the connection once the worker has read it. */
function answerNoContent(socket: Duplex, reason: string, clock: Clock): void {
  if (!socket.writable) return void socket.destroy();
  socket.write(`HTTP/1.1 204 No Content\r\nx-hilbench-dial-again: ${reason.replace(/[^\x20-\x7e]/g, '?')}\r\nconnection: close\r\n\r\n`);
  lingerThenClose(socket as Socket, clock);
}

/**
 * Answers a refused upgrade as the bench answers any request (`{"detail"}`, its status and headers)
 * and closes the connection once the client has read it (what it still sends is read and dropped,
 * so a body it sends, a POST's, does not reset the answer away).
 */
function refuse(socket: Duplex, err: unknown, logger: Logger, clock: Clock): void {
  const mapped = toHttpError(err);
  const known = mapped instanceof HttpError;
  if (!known) logger.error('a debug stream upgrade failed', err);
  const status = known ? mapped.status : 500;
  const body = JSON.stringify({ detail: known ? mapped.detail : 'Internal Server Error' });
  const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close', ...(known ? mapped.headers : {}) };
  if (!socket.writable) return void socket.destroy();
  socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${body}`);
  lingerThenClose(socket as Socket, clock);
}
