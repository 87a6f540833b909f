import type { BenchClient } from './bench-client.js';
import type { Job } from './bench-types.js';

/** What a job printed up to a pattern: the match and the device time (from reset release) of the chunk that completed it. */
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

  /** Reads the live UART until `pattern` shows up or the job ends, for at most `timeoutMs` of host time. */
  async search(pattern: string | RegExp, options: { timeoutMs?: number } = {}): Promise<PrintSearch> {
    const regex = typeof pattern === 'string' ? new RegExp(pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) : pattern;
    const timeoutMs = options.timeoutMs ?? 60_000;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error('timeout')), timeoutMs);
    let text = '';
    try {
      for await (const event of this.client.uart(this.id, { signal: controller.signal })) {
        if (event.kind === 'end') {
          const failure = event.job.failure ? ` (${event.job.failure.kind}: ${event.job.failure.message})` : '';
          return { found: false, text, why: `job ${this.id} ended ${event.job.state}${failure} without printing it` };
        }
        text += event.text;
        if (regex.test(text)) return { found: true, text, atSeconds: event.atNanos / 1e9, timeBase: event.timeBase };
      }
      return { found: false, text, why: `the UART stream of job ${this.id} ended` };
    } catch (err) {
      if (controller.signal.aborted) return { found: false, text, why: `not printed within ${timeoutMs} ms of host time` };
      throw err;
    } finally {
      clearTimeout(timer);
      controller.abort();
    }
  }
}
