import type { Duplex } from 'node:stream';
import { duplexPair } from '../../../core/duplex-pair.js';
import { DebugLegRefused } from '../../../clients/bench/debug-leg.js';
import { type DebugTerms, type JobTicket, type WorkerLink, type WorkerTask } from '../../../harness/worker/worker-link.js';
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
    debugDial: (jobId, signal) => inProcessDebugLeg(gateway, workerId, jobId, signal),
  };
}

/**
 * A debug leg of the worker in this process (decision 0910): parked with the relay as a remote
 * worker's upgrade is, and, when a debugger comes, one end of a duplex pair (the other is spliced
 * with the debugger's connection), so the relay has one kind of leg.
 */
function inProcessDebugLeg(gateway: WorkerGateway, workerId: string, jobId: string, signal: AbortSignal): Promise<Duplex | undefined> {
  return new Promise<Duplex | undefined>((resolve, reject) => {
    const unpark = gateway.debug.parkWorker(workerId, jobId, {
      take: () => {
        signal.removeEventListener('abort', onAbort);
        const [worker, server] = duplexPair();
        resolve(worker);
        return server;
      },
      release: (answer) => {
        signal.removeEventListener('abort', onAbort);
        if (answer.kind === 'again') resolve(undefined);
        else reject(new DebugLegRefused(`job ${jobId} is no longer this worker's debug job: ${answer.reason}`));
      },
    });
    const onAbort = () => {
      unpark?.();
      resolve(undefined);
    };
    if (!unpark) return reject(new DebugLegRefused(`job ${jobId} is not this worker's running debug job`));
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
  });
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
