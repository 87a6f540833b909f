import type { DebugTerms, JobTicket, WorkerLink, WorkerTask } from '../../harness/worker/worker-link.js';
import type { HealthCheckRecord } from '../store/health-check-store.js';
import { boardOfInstance } from './pool-instances.js';
import type { JobRecord } from '../store/bench-store.js';
import type { WorkerGateway } from './worker-gateway.js';
import type { Clock } from '../../core/clock.js';

/** How long the in-process worker's wait for debugger bytes lasts before it asks again, host ms (as a remote worker's long poll). */
const DEBUG_EVENTS_WAIT_MS = 20_000;

/**
 * The gateway as the `WorkerLink` of one worker: what the worker in the server's process calls
 * directly, and what the remote workers' HTTP routes reach through `WorkerProtocol` (the same
 * methods, checked). `claimMs` null for the worker in this process (claims never lapse).
 */
export function gatewayLink(gateway: WorkerGateway, workerId: string, options: { claimMs: number | null; claimWaitMs?: number }, clock: Clock): WorkerLink {
  return {
    claim: (boards, signal) => (options.claimWaitMs === undefined ? gateway.claim(workerId, options.claimMs, boards, signal) : boundedClaim(gateway, workerId, options.claimMs, boards, signal, options.claimWaitMs, clock)),
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
      await gateway.healthCheckDone(workerId, checkId, report);
    },
    watch: (jobId, listener) => gateway.watch(jobId, listener),
    debugEvents: (jobId, signal) => gateway.debug.events(workerId, jobId, DEBUG_EVENTS_WAIT_MS, signal),
    debugSend: async (jobId, stream, text, closed) => {
      if (!gateway.debug.fromTarget(workerId, jobId, stream, text, closed)) throw new Error(`debug job ${jobId} is no longer this worker's`);
    },
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
async function boundedClaim(gateway: WorkerGateway, workerId: string, claimMs: number | null, boards: readonly string[], signal: AbortSignal, waitMs: number, clock: Clock) {
  const bounded = new AbortController();
  const end = () => bounded.abort();
  signal.addEventListener('abort', end, { once: true });
  if (signal.aborted) end();
  const timer = clock.setTimeout(end, waitMs);
  try {
    return await gateway.claim(workerId, claimMs, boards, bounded.signal);
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
