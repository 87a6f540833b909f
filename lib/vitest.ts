import { readFileSync } from 'node:fs';
import { expect, recordArtifact, test as base } from 'vitest';
import { durationMs } from '../harness/scenario/duration.js';
import { BenchClient } from '../clients/bench/bench-client.js';
import type { BenchSession } from '../clients/bench/bench-session.js';
import { FlashedJob } from './flashed-job.js';
import { startInProcessBench } from './in-process-bench.js';

/**
 * `hilbench/vitest`: hardware-in-the-loop tests as vitest tests (docs/library.md).
 *
 *   import { test, expect } from 'hilbench/vitest';
 *   test('prints ready', async ({ flash }) => {
 *     const job = await flash('build/app.elf');
 *     await expect(job).toPrint(/ready/, { within: '2s' });
 *   });
 *
 * Against `HILBENCH_URL` (with `HILBENCH_TOKEN`, else a fresh agent) when it is set; otherwise a
 * bench service in this process on the simulators, so the same file runs on a laptop and in a lab.
 * The board is `test.scoped({ boardId: 'uno' })`, else `HILBENCH_BOARD`, else `pico`. Tests on
 * one board take turns (the service queues their sessions); tests on different boards can run
 * at once (`test.concurrent`).
 */
export interface HilbenchFixtures {
  /** The board the test runs on. */
  boardId: string;
  /** A client of the bench, with an agent token. */
  bench: BenchClient;
  /** The test's session on `boardId`, ended when the test ends, however it ends. */
  board: BenchSession;
  /** Flashes an ELF file (path or bytes) on the test's board and answers the running job. */
  flash: (elf: string | Uint8Array, options?: { uartSeconds?: number }) => Promise<FlashedJob>;
}

/** How long a test waits for its board when another test holds it, seconds (the service's most). */
const BOARD_WAIT_SECONDS = 300;

export const test = base.extend<HilbenchFixtures>({
  boardId: process.env.HILBENCH_BOARD ?? 'pico',
  bench: [
    // vitest reads a fixture's dependencies from this pattern: none.
    async ({}, use) => {
      const remote = process.env.HILBENCH_URL;
      const local = remote ? undefined : await startInProcessBench();
      try {
        const client = new BenchClient({ baseUrl: remote ?? local!.url, retry: { attempts: 3 } });
        const token = process.env.HILBENCH_TOKEN ?? (await client.register('vitest')).token;
        await use(client.withToken(token));
      } finally {
        await local?.close();
      }
    },
    { scope: 'file' },
  ],
  board: async ({ bench, boardId }, use) => {
    const session = await bench.openSession(boardId, { waitSeconds: BOARD_WAIT_SECONDS });
    try {
      await use(session);
    } finally {
      await session.end().catch(() => undefined);
    }
  },
  flash: async ({ bench, board, task }, use) => {
    const jobs: FlashedJob[] = [];
    await use(async (elf, options = {}) => {
      const bytes = typeof elf === 'string' ? new Uint8Array(readFileSync(elf)) : elf;
      const job = await board.submitFlash(bytes, options.uartSeconds === undefined ? {} : { uartSeconds: options.uartSeconds });
      const flashed = new FlashedJob(job.job_id, board.board, bench);
      jobs.push(flashed);
      return flashed;
    });
    // The test has its verdict (a toPrint matched, or failed): jobs still running are stopped, so
    // the board is free for the next test at once, not after their capture windows (issue 31).
    for (const job of jobs) await job.cancel('the test ended').catch(() => undefined);
    // A failed test carries the UART of every job it flashed in its report: its output (what the
    // reporters show with the failure, JUnit's <system-err>) and an artifact with the whole text.
    if (task.result?.state !== 'fail') return;
    for (const job of jobs) {
      const finished = await bench.getJob(job.id).catch(() => undefined);
      const body = finished?.uart?.text ?? '(no UART captured)';
      const tail = body.length > 4000 ? `...${body.slice(-4000)}` : body;
      console.error(`UART of job ${job.id} on ${job.board} (${finished?.state ?? 'unknown'}):\n${tail}`);
      await recordArtifact(task, { type: 'hilbench:uart', message: `UART of job ${job.id} on ${job.board}`, attachments: [{ contentType: 'text/plain', body }] });
    }
  },
});

interface PrintOptions {
  /** Device time from reset release by which the text must be printed: `2s`, `500ms` or ms. */
  within?: string | number;
  /** Host time to wait for it at most (default 60 000 ms). */
  timeoutMs?: number;
}

expect.extend({
  async toPrint(received: unknown, pattern: string | RegExp, options: PrintOptions = {}) {
    if (!(received instanceof FlashedJob)) throw new TypeError('toPrint expects the job that flash() answered');
    const search = await received.search(pattern, options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs });
    const withinSeconds = options.within === undefined ? undefined : durationMs(options.within) / 1000;
    const tail = (text: string) => text.split('\n').slice(-10).join('\n');
    if (!search.found) {
      return { pass: false, message: () => `expected job ${received.id} to print ${String(pattern)}: ${search.why}\nUART (last lines):\n${tail(search.text)}` };
    }
    const late = withinSeconds !== undefined && search.atSeconds > withinSeconds;
    return {
      pass: !late,
      message: () =>
        late
          ? `expected job ${received.id} to print ${String(pattern)} within ${withinSeconds} s of ${search.timeBase} time, it did at ${search.atSeconds.toFixed(3)} s`
          : `expected job ${received.id} not to print ${String(pattern)}${withinSeconds === undefined ? '' : ` within ${withinSeconds} s`}, it did at ${search.atSeconds.toFixed(3)} s`,
    };
  },
});

declare module 'vitest' {
  interface TestArtifactRegistry {
    /** The UART of a job a failed test flashed. */
    'hilbench:uart': { type: 'hilbench:uart'; message: string; attachments: { contentType: string; body: string }[] };
  }
  // eslint-disable-next-line @typescript-eslint/no-explicit-any, @typescript-eslint/no-unused-vars -- must match vitest's own declaration to merge
  interface Matchers<T = any> {
    /** The job's UART shows `pattern` (live), within `within` of device time when given. */
    toPrint(pattern: string | RegExp, options?: PrintOptions): Promise<void>;
  }
}

export { expect };
export { FlashedJob };
export type { PrintOptions };
