import type { Clock } from '../../core/clock.js';
import type { AgentRecord, BenchStore, JobRecord } from '../store/bench-store.js';
import { BenchError } from './bench-errors.js';
import type { JobLive } from './job-live.js';
import { type StreamChunk, streamJobUart, waitForJobEnd } from './job-watch.js';
import type { WorkerGateway } from './worker-gateway.js';

/**
 * A caller's jobs as they happen (issue 11): waiting for the end, the UART as a stream, and
 * serial input to a running job. Another agent's job is answered like a missing one.
 */
export class JobStreams {
  constructor(private readonly deps: { clock: Clock; store: BenchStore; live: JobLive; gateway: WorkerGateway }) {}

  private async own(agent: AgentRecord, jobId: string): Promise<JobRecord> {
    const job = await this.deps.store.getJob(jobId);
    if (!job || job.agentId !== agent.agentId) throw new BenchError('job_not_found', `job ${jobId} not found`);
    return job;
  }

  /** The job once done or failed, or as it is after `waitSeconds`. */
  async waitForEnd(agent: AgentRecord, jobId: string, waitSeconds: number, signal: AbortSignal): Promise<JobRecord> {
    await this.own(agent, jobId);
    const job = await waitForJobEnd(this.deps, jobId, Math.round(waitSeconds * 1000), signal);
    if (!job) throw new BenchError('job_not_found', `job ${jobId} not found`);
    return job;
  }

  /** Streams the job's UART from byte `fromOffset` (see `streamJobUart`); returns the stop. */
  async streamUart(
    agent: AgentRecord,
    jobId: string,
    options: { fromOffset: number; onChunk: (chunk: StreamChunk) => void; onEnd: (job: JobRecord) => void; onIdle: () => void; idleMs: number },
  ): Promise<() => void> {
    await this.own(agent, jobId);
    return streamJobUart({ ...this.deps, localUart: (id) => this.deps.gateway.uartSoFar(id) }, jobId, options);
  }

  /** Streams any job's UART, for the operator's console (no owner check: the console checked the operator). */
  async streamUartAsOperator(jobId: string, options: Parameters<JobStreams['streamUart']>[2]): Promise<() => void> {
    if (!(await this.deps.store.getJob(jobId))) throw new BenchError('job_not_found', `job ${jobId} not found`);
    return streamJobUart({ ...this.deps, localUart: (id) => this.deps.gateway.uartSoFar(id) }, jobId, options);
  }

  /** Writes `bytes` to the running firmware's serial input. */
  async writeUart(agent: AgentRecord, jobId: string, bytes: Uint8Array): Promise<void> {
    const job = await this.own(agent, jobId);
    if (job.state !== 'running' && job.state !== 'flashing') {
      throw new BenchError('job_not_running', `job ${jobId} is ${job.state}, not running: serial input reaches a running job only`);
    }
    let written: boolean;
    try {
      written = await this.deps.live.writeInput(jobId, bytes);
    } catch (err) {
      throw new BenchError('job_not_running', `job ${jobId} did not take the input: ${(err as Error).message}`);
    }
    if (!written) {
      throw new BenchError(
        'job_not_running',
        job.state === 'flashing'
          ? `job ${jobId} is flashing: its serial input opens once the board runs; try again in a moment`
          : `job ${jobId} runs on a remote bench worker: serial input reaches jobs run by the server's own worker only`,
      );
    }
  }
}
