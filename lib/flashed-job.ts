import type { BenchClient } from '../clients/bench/bench-client.js';
import type { Job } from '../clients/bench/bench-types.js';

/** What a job printed up to a pattern: the device time (from reset release) of the chunk that completed it, or why it was not found. */
export type PrintSearch =
  | { found: true; text: string; atSeconds: number; timeBase: 'simulated' | 'wall' }
  | { found: false; text: string; why: string };

/** A job submitted by the vitest fixture's `flash`: watch its UART live, or wait for its end. */
export class FlashedJob {
  constructor(
    readonly id: string,
    readonly board: string,
    readonly client: BenchClient,
  ) {}

  /** The finished job (`done` or `failed`). */
  result(options: { timeoutMs?: number } = {}): Promise<Job> {
    return this.client.waitForJob(this.id, options);
  }

  /**
   * Stops the job now, its verdict known, so the board is free for the next test (decision 0535);
   * it ends `failed` with kind `cancelled`, keeping its UART. Answers the job once it stopped.
   */
  cancel(reason = 'the test has its verdict'): Promise<Job> {
    return this.client.cancelJob(this.id, { reason });
  }

  /** Reads the live UART until `pattern` shows up or the job ends, for at most `timeoutMs` of host time (default 60 000). */
  async search(pattern: string | RegExp, options: { timeoutMs?: number } = {}): Promise<PrintSearch> {
    const timeoutMs = options.timeoutMs ?? 60_000;
    const seen = await this.client.waitForUart(this.id, pattern, { timeoutMs });
    if (seen.matched) return { found: true, text: seen.text, atSeconds: seen.atSeconds, timeBase: seen.timeBase };
    if (seen.reason === 'timeout') return { found: false, text: seen.text, why: `not printed within ${timeoutMs} ms of host time` };
    const failure = seen.job?.failure ? ` (${seen.job.failure.kind}: ${seen.job.failure.message})` : '';
    return { found: false, text: seen.text, why: seen.job ? `job ${this.id} ended ${seen.job.state}${failure} without printing it` : `the UART stream of job ${this.id} ended` };
  }
}
