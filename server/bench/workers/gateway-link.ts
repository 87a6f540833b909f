import { type DebugChannel, DebugChannelRefused, type DebugChannelHandlers, type DebugTerms, type JobTicket, type WorkerLink, type WorkerTask } from '../../../harness/worker/worker-link.js';
import type { HealthCheckRecord } from '../../storage/bench/health-check-store.js';
import type { WorkerBoardReport } from '../../storage/bench/worker-registry.js';
import { boardOfInstance } from '../domain/pool-instances.js';
import type { JobRecord } from '../../storage/bench/bench-store.js';
import type { WorkerGateway } from './worker-gateway.js';
import type { Clock } from '../../../core/clock.js';

/**
 * The gateway as the `WorkerLink` of one worker: what the worker in the server's process calls
 * directly, and what the remote workers' HTTP routes reach through `WorkerProtocol` (the same
 * methods, checked). `claimMs` null for the worker in this process (claims never lapse).
 */
export function gatewayLink(gateway: WorkerGateway, workerId: string, options: { claimMs: number | null; claimWaitMs?: number; reports?: readonly WorkerBoardReport[] }, clock: Clock): WorkerLink {
  return {
    claim: (boards, signal) =>
      options.claimWaitMs === undefined
        ? gateway.claim(workerId, options.claimMs, boards, signal, options.reports)
        : boundedClaim(gateway, workerId, options.claimMs, boards, signal, options.claimWaitMs, clock, options.reports),
    firmware: (ticket) => gateway.firmware(ticket.firmwareSha256),
    running: (jobId) => gateway.running(workerId, jobId),
    uart: async (jobId, report) => {
      await gateway.uart(workerId, options.claimMs, jobId, report);
    },
    heartbeat: (jobId) => gateway.heartbeat(workerId, options.claimMs, jobId),
    finish: async (jobId, outcome) => {
      await gateway.finish(workerId, jobId, outcome);
    },
    input: (jobId, writtenThroughSeq, signal) => gateway.input(workerId, jobId, writtenThroughSeq, signal),
    healthCheckDone: async (checkId, report) => {
      await gateway.healthChecks.done(workerId, checkId, report);
    },
    watch: (jobId, listener) => gateway.watch(jobId, listener),
    debugConnect: async (jobId, handlers) => inProcessDebugChannel(gateway, workerId, jobId, handlers),
  };
}

/**
 * The debug channel of the worker in this process (decision 0625): the relay's calls, each handed
 * to the worker on a later microtask, in order, so that neither side runs inside the other's call.
 */
function inProcessDebugChannel(gateway: WorkerGateway, workerId: string, jobId: string, handlers: DebugChannelHandlers): DebugChannel {
  const later = (fn: () => void) => queueMicrotask(fn);
  const connected = gateway.debug.connectWorker(workerId, jobId, {
    open: (stream) => later(() => handlers.open(stream)),
    data: (stream, bytes) => later(() => handlers.data(stream, bytes.toString('latin1'))),
    close: (stream, reason) => later(() => handlers.close(stream, reason)),
    ended: (reason) => later(() => handlers.ended(reason)),
    replaced: () => later(() => handlers.dropped('replaced by a newer connection')),
    bufferedBytes: 0,
  });
  if (!connected) throw new DebugChannelRefused(`job ${jobId} is not this worker's running debug job`);
  return {
    data: (stream, text) => later(() => connected.data(stream, Buffer.from(text, 'latin1'))),
    close: (stream, reason) => later(() => connected.close(stream, reason)),
    end: () => later(() => connected.disconnected()),
  };
}

/** What a claim hands the worker of `job`: its ticket, with debug terms for a debug job. */
export function ticketOf(job: JobRecord, maxUartBytes: number, debug: DebugTerms | undefined): JobTicket {
  return {
    kind: 'job',
    jobId: job.jobId,
    board: job.board,
    ...(job.instance === undefined ? {} : { instance: job.instance }),
    firmwareSha256: job.firmware.sha256,
    uartSeconds: job.uartSeconds,
    maxUartBytes,
    ...(debug ? { debug } : {}),
  };
}

/**
 * A claim that ends empty after `waitMs` (host ms, on the injected clock) unless `signal` ends it
 * first. Ending the wait loses nothing: a job the gateway claimed as the wait ended is still
 * answered, and the worker runs the answer of every claim it made (decision 0555's lost-jobs fix).
 */
async function boundedClaim(gateway: WorkerGateway, workerId: string, claimMs: number | null, boards: readonly string[], signal: AbortSignal, waitMs: number, clock: Clock, reports?: readonly WorkerBoardReport[]) {
  const bounded = new AbortController();
  const end = () => bounded.abort();
  signal.addEventListener('abort', end, { once: true });
  if (signal.aborted) end();
  const timer = clock.setTimeout(end, waitMs);
  try {
    return await gateway.claim(workerId, claimMs, boards, bounded.signal, reports);
  } finally {
    clock.clearTimeout(timer);
    signal.removeEventListener('abort', end);
  }
}

/** The ticket of a claimed health check: of a board, or of one instance of its pool (decision 0606), recorded under the instance's id. */
export function healthCheckTicket(check: HealthCheckRecord): WorkerTask {
  const board = boardOfInstance(check.board) ?? check.board;
  return { kind: 'health-check', checkId: check.checkId, board, ...(board === check.board ? {} : { instance: check.board }), timeoutMs: check.timeoutMs };
}
