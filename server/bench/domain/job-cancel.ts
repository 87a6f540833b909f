import type { Clock } from '../../../core/clock.js';
import { isFinishedJobState } from '../../../wire/job-states.js';
import type { Logger } from '../../http/logger.js';
import type { AgentRecord, BenchStore, JobRecord } from '../../storage/bench/bench-store.js';
import { BenchError } from './bench-errors.js';
import type { JobLive } from './job-live.js';
import { waitForJobEnd } from './job-watch.js';
import type { WorkerGateway } from '../workers/worker-gateway.js';

/**
 * How long a cancel request waits for a flashing or running job to stop, host ms: the worker in
 * this process stops it at once, a remote worker at its waiting serial-input fetch or next claim
 * renewal (decision 0535). Past it, the job is answered as it is (still stopping).
 */
export const CANCEL_WAIT_MS = 15_000;

/**
 * An agent stops its own job once its verdict is known (issue 31, decision 0535): a queued job
 * fails as `cancelled` at once; a flashing or running one is asked to stop (the store keeps the
 * first reason) and its worker told now, so the job ends `failed` with kind `cancelled`, keeping
 * the UART it captured, and its board is free for the next job. Idempotent: a finished job, or
 * one already stopping, is answered as it is.
 */
export class JobCancel {
  constructor(private readonly deps: { clock: Clock; store: BenchStore; gateway: WorkerGateway; live: JobLive; logger: Logger }) {}

  async cancel(agent: AgentRecord, jobId: string, reason: string, signal: AbortSignal): Promise<JobRecord> {
    const { store, gateway, live, logger, clock } = this.deps;
    const job = await store.getJob(jobId);
    if (!job || job.agentId !== agent.agentId) throw new BenchError('job_not_found', `job ${jobId} not found`);
    if (isFinishedJobState(job.state)) return job;
    const why = reason === '' ? 'its agent cancelled it' : `its agent cancelled it: ${reason}`;
    const asked = await store.requestJobCancel(jobId, why, clock.nowMs());
    if (!asked) throw new BenchError('job_not_found', `job ${jobId} not found`);
    if (isFinishedJobState(asked.state)) {
      if (job.state === 'queued') {
        // Cancelled before it started: nothing runs it, so this is its end (and its board may be free).
        logger.info(`job ${jobId} cancelled before it started`, { jobId, state: asked.state, board: asked.board });
        live.publishState(jobId, asked.state, asked);
        gateway.jobQueued(asked.board);
      }
      return asked;
    }
    // The worker in this process stops it now; a remote one at its waiting serial-input fetch, woken here.
    await gateway.pushStoredCancels();
    gateway.inputQueued(jobId);
    return (await waitForJobEnd({ clock, store, live, endsHere: (id) => gateway.carries(id) }, jobId, CANCEL_WAIT_MS, signal, asked)) ?? asked;
  }
}
