import { BenchClient } from '../clients/bench/bench-client.js';
import { BenchApiError, BenchBusyError, BenchTimeoutError } from '../clients/bench/bench-errors.js';
import type { BenchSession } from '../clients/bench/bench-session.js';
import type { Job } from '../clients/bench/bench-types.js';

/**
 * A run that never started: refused, unreachable, bad arguments, no such board. `hilbench flash`
 * exits 2 for it (docs/cli.md), so CI tells "could not run" from "the firmware failed" (1).
 */
export class NeverRan extends Error {
  override name = 'NeverRan';
}

export interface ServerRunOptions {
  server: string;
  token: string | undefined;
  board: string;
  /** Seconds of UART to capture (`--timeout`), device time. */
  uartSeconds: number;
  /** Seconds to wait for a busy board in its session queue (`--wait`); 0: fail at once. */
  waitSeconds: number;
  bytes: Uint8Array;
  /** Prints serial output; answers the verdict's reason once one is reached (the run stops then). */
  print: (text: string) => string | undefined;
  /** Progress and notes, one line each (stderr). */
  note: (line: string) => void;
}

/** Host ms between two looks at the board's queue while waiting in it, to print the position. */
const QUEUE_LOOK_MS = 2_000;
/** The session a queued run holds its board with: freed this long after a killed CLI's last heartbeat. */
const QUEUED_SESSION_IDLE_SECONDS = 30;
/** The service's longest session wait, seconds: a longer `--wait` queues again. */
const MAX_SESSION_WAIT_SECONDS = 300;

/**
 * Runs the image on a bench server (decision 0536): submits it without a session; a busy board
 * (anyone's job or session, the caller's own included) is waited for in its session queue for up
 * to `waitSeconds`, the position printed as it changes. The UART is watched live; once the
 * verdict is out the job is cancelled, so the board is free for the next run at once.
 */
export async function flashOnServer(options: ServerRunOptions): Promise<{ failed?: string }> {
  if (!options.token) throw new NeverRan('--server needs --token (an agent token: POST /api/v1/agents/register) or HILBENCH_TOKEN');
  const client = new BenchClient({ baseUrl: options.server, token: options.token });
  let session: BenchSession | undefined;
  try {
    let job: Job;
    try {
      job = await client.submitFlash(options.board, options.bytes, { uartSeconds: options.uartSeconds });
    } catch (err) {
      if (!(err instanceof BenchBusyError) || options.waitSeconds <= 0) throw neverRan(err, options);
      options.note(`hilbench flash: board ${options.board} is busy: ${String(err.detail)}; waiting up to ${options.waitSeconds} s for it in its queue (--wait)`);
      session = await waitForBoard(client, options);
      job = await session.submitFlash(options.bytes, { uartSeconds: options.uartSeconds }).catch((e: unknown) => {
        throw neverRan(e, options);
      });
    }
    options.note(`hilbench flash: job ${job.job_id} on ${options.board} at ${options.server}`);
    return await watch(client, job, options);
  } finally {
    await session?.end().catch(() => undefined);
  }
}

/** Follows the job's live UART to a verdict (then cancels the job) or to its end. */
async function watch(client: BenchClient, job: Job, options: ServerRunOptions): Promise<{ failed?: string }> {
  for await (const event of client.uart(job.job_id)) {
    if (event.kind === 'uart') {
      const verdict = options.print(event.text);
      if (verdict !== undefined) {
        // The verdict is out: the rest of the capture window would only keep the board from the next run.
        await client.cancelJob(job.job_id, { reason: `hilbench flash has its verdict: ${verdict}` }).catch((err: unknown) => {
          options.note(`hilbench flash: cancelling job ${job.job_id} failed (it ends with its capture window): ${(err as Error).message}`);
        });
        return {};
      }
      continue;
    }
    const ended = event.job;
    if (ended.state === 'failed') return { failed: `job ${ended.job_id} failed: ${ended.failure?.kind}: ${ended.failure?.message}` };
    if (ended.stop?.reason === 'crashed') return { failed: `the firmware crashed: ${ended.stop.message ?? ''}` };
    if (ended.stop?.reason === 'exited' && ended.stop.exit_code !== 0) return { failed: `the firmware exited with code ${ended.stop.exit_code}` };
    return {};
  }
  return { failed: `the UART stream of job ${job.job_id} closed before the job ended` };
}

/** Waits in the board's session queue until it is granted, printing the place as it changes; NeverRan when `--wait` runs out. */
async function waitForBoard(client: BenchClient, options: ServerRunOptions): Promise<BenchSession> {
  const deadlineMs = performance.now() + options.waitSeconds * 1000;
  const looking = new AbortController();
  let shown = '';
  const look = async () => {
    while (!looking.signal.aborted) {
      const queue = await client.boardQueue(options.board, { signal: looking.signal }).catch((err: unknown) => {
        // A refusal (a bench too old for instance ids in the queue route, say) is said once, not
        // swallowed; the wait goes on without the place. A network blip or the abort says nothing.
        if (err instanceof BenchApiError && shown !== 'refused') {
          shown = 'refused';
          options.note(`hilbench flash: waiting for board ${options.board}; its place in the queue is not shown: ${typeof err.detail === 'string' ? err.detail : JSON.stringify(err.detail)}`);
        }
        return undefined;
      });
      if (queue?.position != null) {
        const line = `number ${queue.position} of ${queue.waiting}`;
        if (line !== shown) options.note(`hilbench flash: waiting for board ${options.board}: ${line} in its queue (${Math.ceil((deadlineMs - performance.now()) / 1000)} s left)`);
        shown = line;
      }
      await pause(QUEUE_LOOK_MS, looking.signal);
    }
  };
  const looker = look();
  try {
    for (;;) {
      const leftSeconds = Math.floor((deadlineMs - performance.now()) / 1000);
      if (leftSeconds <= 0) throw new NeverRan(`waiting for board ${options.board} failed: it was still busy when --wait ${options.waitSeconds} s ran out`);
      const waitSeconds = Math.min(leftSeconds, MAX_SESSION_WAIT_SECONDS);
      const asked = performance.now();
      try {
        return await client.openSession(options.board, { waitSeconds, idleSeconds: QUEUED_SESSION_IDLE_SECONDS });
      } catch (err) {
        if (!(err instanceof BenchBusyError)) throw neverRan(err, options);
        // Refused before its wait ran out (a health check, the caller's own session): try again when it says.
        const early = performance.now() - asked < (waitSeconds - 1) * 1000;
        if (early) await pause(Math.min((err.retryAfterSeconds ?? 5) * 1000, Math.max(0, deadlineMs - performance.now())));
      }
    }
  } finally {
    looking.abort();
    await looker;
  }
}

/** `err` as the never-ran error it is, its message starting with what failed. */
function neverRan(err: unknown, options: ServerRunOptions): Error {
  if (err instanceof NeverRan) return err;
  if (err instanceof BenchApiError) {
    const detail = typeof err.detail === 'string' ? err.detail : JSON.stringify(err.detail);
    return new NeverRan(`the bench at ${options.server} refused ${err.method} ${err.path.split('?')[0]} (${err.status}): ${detail}`);
  }
  if (err instanceof BenchTimeoutError) return new NeverRan(`the bench at ${options.server} did not answer: ${err.message}`);
  if (err instanceof TypeError) {
    const cause = (err as { cause?: { message?: string } }).cause?.message;
    return new NeverRan(`the bench at ${options.server} could not be reached: ${cause ?? err.message}`);
  }
  return err as Error;
}

/** Host time passing (this is the CLI's entry point, on the system clock); ends early when `signal` aborts. */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}
