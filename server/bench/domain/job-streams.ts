import type { Clock } from '../../../core/clock.js';
import type { AgentRecord, BenchStore, JobRecord } from '../../storage/bench/bench-store.js';
import type { AgentLongPolls } from './agent-long-polls.js';
import { BenchError } from './bench-errors.js';
import type { JobLive } from './job-live.js';
import { type StreamChunk, streamJobUart, waitForJobEnd } from './job-watch.js';
import type { WorkerGateway } from '../workers/worker-gateway.js';

/**
 * A caller's jobs as they happen (issue 11): waiting for the end, the UART as a stream, and
 * serial input to a running job. Another agent's job is answered like a missing one.
 */
export class JobStreams {
  constructor(private readonly deps: { clock: Clock; store: BenchStore; live: JobLive; gateway: WorkerGateway; longPolls: AgentLongPolls }) {}

  private async own(agent: AgentRecord, jobId: string): Promise<JobRecord> {
    const job = await this.deps.store.getJob(jobId);
    if (!job || job.agentId !== agent.agentId) throw new BenchError('job_not_found', `job ${jobId} not found`);
    return job;
  }

  /** The job once done or failed, or as it is after `waitSeconds`. */
  async waitForEnd(agent: AgentRecord, jobId: string, waitSeconds: number, signal: AbortSignal): Promise<JobRecord> {
    return this.deps.longPolls.run(agent, async () => {
      const owned = await this.own(agent, jobId);
      const watch = { ...this.deps, endsHere: (id: string) => this.deps.gateway.carries(id) };
      const job = await waitForJobEnd(watch, jobId, Math.round(waitSeconds * 1000), signal, owned);
      if (!job) throw new BenchError('job_not_found', `job ${jobId} not found`);
      return job;
    });
  }

  /** Streams the job's UART from byte `fromOffset` (see `streamJobUart`); returns the stop. */
  async streamUart(
    agent: AgentRecord,
    jobId: string,
    options: { fromOffset: number; onChunk: (chunk: StreamChunk) => void; onEnd: (job: JobRecord) => void; onIdle: () => void; idleMs: number },
  ): Promise<() => void> {
    // Held until the stream stops: its end, or its client gone (the caller calls the stop for both).
    const release = this.deps.longPolls.take(agent);
    try {
      await this.own(agent, jobId);
      const stop = streamJobUart({ ...this.deps, localUart: (id) => this.deps.gateway.uartSoFar(id) }, jobId, options);
      return () => {
        stop();
        release();
      };
    } catch (err) {
      release();
      throw err;
    }
  }

  /** Streams any job's UART, for the operator's console (no owner check: the console checked the operator). */
  async streamUartAsOperator(jobId: string, options: Parameters<JobStreams['streamUart']>[2]): Promise<() => void> {
    if (!(await this.deps.store.getJob(jobId))) throw new BenchError('job_not_found', `job ${jobId} not found`);
    return streamJobUart({ ...this.deps, localUart: (id) => this.deps.gateway.uartSoFar(id) }, jobId, options);
  }

  /**
   * Queues `bytes` for the running firmware's serial input (decision 0420), in the store, for the
   * worker holding the job wherever it is connected; then waits up to `SERIAL_INPUT_WRITE_WAIT_MS`
   * to hear that the worker wrote it. Input sent while the job flashes waits for reset release.
   */
  async writeUart(agent: AgentRecord, jobId: string, bytes: Uint8Array, signal: AbortSignal): Promise<SerialInputReceipt> {
    // Refused before anything is queued: a refused request changes nothing.
    return this.deps.longPolls.run(agent, () => this.queueAndWait(agent, jobId, bytes, signal));
  }

  private async queueAndWait(agent: AgentRecord, jobId: string, bytes: Uint8Array, signal: AbortSignal): Promise<SerialInputReceipt> {
    await this.own(agent, jobId);
    const queued = await this.deps.store.serialInput.enqueue(jobId, bytes, { nowMs: this.deps.clock.nowMs(), maxPendingBytes: MAX_PENDING_SERIAL_INPUT_BYTES });
    if (queued.kind === 'not-running') {
      throw new BenchError('job_not_running', `job ${jobId} is ${queued.state ?? 'gone'}, not running: serial input reaches a running job only`);
    }
    if (queued.kind === 'full') {
      throw new BenchError(
        'serial_input_full',
        `job ${jobId} has ${queued.pendingBytes} bytes of serial input its worker has not written yet (at most ${MAX_PENDING_SERIAL_INPUT_BYTES}); send more once it has (retry_after_seconds=1)`,
        { retryAfterSeconds: 1 },
      );
    }
    this.deps.gateway.inputQueued(jobId);
    const written = await this.deps.gateway.inputWritten(jobId, queued.seq, SERIAL_INPUT_WRITE_WAIT_MS, signal);
    return { seq: queued.seq, delivery: written ? 'written' : 'queued' };
  }
}

/** How long an agent's serial input request waits to hear its input was written, host ms. */
export const SERIAL_INPUT_WRITE_WAIT_MS = 2_000;
/** The most serial input of one job that may wait for its worker, bytes (16 full requests). */
export const MAX_PENDING_SERIAL_INPUT_BYTES = 64 * 1024;

/** What became of an agent's serial input: written to the device, or queued for the worker still. */
export interface SerialInputReceipt {
  /** The input's number within the job (1, 2, ...), the order the worker writes them in. */
  seq: number;
  delivery: 'written' | 'queued';
}
