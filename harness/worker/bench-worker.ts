import type { Board } from '../../boards/board-schema.js';
import { type Backend, BackendError, type Device, type FirmwareImage } from '../../backends/backend.js';
import { loadFirmwareImage } from '../../backends/image-check.js';
import { type Clock, sleep } from '../../core/clock.js';
import { LocalDispatcher, type LocalDispatcherOptions } from '../dispatcher.js';
import type { FirmwareRun } from '../run-firmware.js';
import { jobFailureDetail } from './job-failure-detail.js';
import { runWorkerHealthCheck } from './worker-health-check.js';
import type { HealthCheckTicket, JobTicket, SerialInputBatch, WorkerJobOutcome, WorkerLink, WorkerTask } from './worker-link.js';
import { UartReporter } from './uart-reporter.js';
import { renewClaim } from './claim-renewal.js';
import { runDebugJob } from './debug-job.js';

/** The board a job runs on and the backend to open it with, decided when the job starts. */
export interface WorkerBoard {
  board: Board;
  backend: Backend;
  /** The backend that actually opened the board, once it did (a gated backend may pick one late). */
  used?: () => Backend | undefined;
  /** The backend keeping the board's health and running its health checks, when not `backend` itself. */
  healthKeeper?: Backend;
}

export interface BenchWorkerOptions {
  clock: Clock;
  link: WorkerLink;
  /** The ids of the boards this worker serves. */
  boards: readonly string[];
  /**
   * How many jobs of a board run here at once: its pool size on this worker (decision 0510; the
   * server hands each job of the board one of this worker's instances of it). Default 1.
   */
  poolSize?: (boardId: string) => number;
  /** The board and backend for a job that starts now; undefined when the worker has no such board. */
  boardFor: (boardId: string) => WorkerBoard | undefined;
  /** Told after each job, with the backend it ran on (board health is asked again). Never rejects. */
  afterJob?: (boardId: string, backend: Backend | undefined) => Promise<void>;
  /** Deadlines and abort grace of the jobs (the dispatcher's options). */
  dispatcher?: Omit<LocalDispatcherOptions, 'clock'>;
  /** Host ms between two claim renewals of a running job. Default 2 000. */
  heartbeatMs?: number;
  /** Host ms to wait before asking again after the server could not be reached; doubles up to 30 000. Default 1 000. */
  retryMs?: number;
  /**
   * The most claims this worker waits in at once. Default `MAX_CLAIMS_IN_FLIGHT`, what the server
   * lets a remote worker hold over HTTP. The worker in a server's own process is held to no such
   * limit and passes its number of boards: then a board that frees always gets a claim of its own
   * (decision 0640).
   */
  maxClaimsInFlight?: number;
  logError: (message: string, cause?: unknown) => void;
}

/**
 * A bench worker: claims jobs for its boards from the server, runs each on its backend (one job
 * per board at a time, boards in parallel, every job with a deadline), reports the running phase,
 * the UART as it is captured and the outcome, renews its claim while a job runs and stops a job
 * the server asks to stop. The same worker runs inside the server (the embedded default) and on a
 * single-board computer next to the hardware; only its `WorkerLink` differs.
 */
export class BenchWorker {
  private readonly dispatcher: LocalDispatcher;
  /** Per board, how many of its instances run a task here (a health check takes them all). */
  private readonly busy = new Map<string, number>();
  private readonly running = new Set<Promise<void>>();
  /** Wakes the claim loop (a task ended: its board has room again). */
  private wakeClaims: () => void = () => undefined;
  /** Aborted when the worker closes: stops the health checks it runs. */
  private readonly closing = new AbortController();
  private loop: Promise<void> | undefined;
  private closed = false;
  /** Jobs started on their device here (recent ones), and who waits for a job to start. */
  private readonly startedJobs = new Set<string>();
  private readonly startWaiters = new Map<string, Array<() => void>>();

  constructor(private readonly options: BenchWorkerOptions) {
    this.dispatcher = new LocalDispatcher({ clock: options.clock, ...options.dispatcher });
  }

  /** The wall-clock budget of a job of `uartSeconds` on a backend with `budget` (its `Retry-After`). */
  deadlineMs(uartSeconds: number, budget?: Parameters<LocalDispatcher['deadlineMs']>[1]): number {
    return this.dispatcher.deadlineMs(uartSeconds, budget);
  }

  /** Starts claiming jobs. */
  start(): void {
    this.loop ??= this.claimLoop();
  }

  /**
   * Stops claiming and cancels the jobs running here without reporting an outcome: the server
   * keeps them as they are and fails them when this worker starts again (`releaseWorkerJobs`) or
   * its claims lapse, with the UART reported so far.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.closing.abort();
    this.wakeClaims();
    await this.dispatcher.close();
    await Promise.all([this.loop, ...this.running]);
  }

  /**
   * Settles once job `jobId` has started here: its deadline runs and its device is being opened
   * (tests drive a fake clock from then on).
   */
  started(jobId: string): Promise<void> {
    if (this.startedJobs.has(jobId)) return Promise.resolve();
    return new Promise((resolve) => this.startWaiters.set(jobId, [...(this.startWaiters.get(jobId) ?? []), resolve]));
  }

  private markStarted(jobId: string): void {
    this.startedJobs.add(jobId);
    // Only recent ones are remembered: a long-running worker does not grow without bound.
    if (this.startedJobs.size > 1_000) this.startedJobs.delete(this.startedJobs.values().next().value!);
    for (const resolve of this.startWaiters.get(jobId) ?? []) resolve();
    this.startWaiters.delete(jobId);
  }

  private capacity(boardId: string): number {
    return Math.max(1, this.options.poolSize?.(boardId) ?? 1);
  }

  /** Waits until no job runs here (tests, orderly shutdown). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  /**
   * Claims tasks for the boards with room, runs each as it comes, and claims again. A claim in
   * flight is never aborted before the worker closes: the server may have handed out a job on it
   * already, and an answer thrown away is a job claimed by a worker that never runs it (it failed
   * as `interrupted` once its claim lapsed, or waited for ever on the worker in the server's
   * process). So a board that frees while a claim is in flight is claimed for by that claim when
   * it already covers the board (a pool of several instances), or by one more claim alongside it.
   */
  private async claimLoop(): Promise<void> {
    let retryMs = this.options.retryMs ?? 1_000;
    const inFlight = new Set<Claim>();
    // Claims in flight cover disjoint boards (a new one only boards no other covers), so at one per
    // board a board with room is never left uncovered. Under a lower limit it is, until a claim in
    // flight answers: with two replicas on one database, claims on boards whose jobs are queued
    // through the other replica are not woken and answer only at their poll, and the jobs queued
    // here for a board that freed meanwhile waited for that poll (decision 0640).
    const maxInFlight = this.options.maxClaimsInFlight ?? MAX_CLAIMS_IN_FLIGHT;
    while (!this.closed) {
      const covered = new Set([...inFlight].flatMap((c) => c.boards));
      const idle = this.options.boards.filter((b) => (this.busy.get(b) ?? 0) < this.capacity(b) && !covered.has(b));
      if (idle.length > 0 && inFlight.size < maxInFlight) {
        const claim: Claim = { boards: idle, answer: undefined as unknown as Claim['answer'] };
        claim.answer = this.options.link.claim(idle, this.closing.signal).then(
          (ticket) => ({ claim, ticket }),
          (error: unknown) => ({ claim, error }),
        );
        inFlight.add(claim);
        continue;
      }
      const woken = new Promise<undefined>((resolve) => (this.wakeClaims = () => resolve(undefined)));
      const answer = await Promise.race([woken, ...[...inFlight].map((c) => c.answer)]);
      if (answer === undefined) continue;
      inFlight.delete(answer.claim);
      if ('error' in answer) {
        if (this.closed) return;
        this.options.logError(`claiming a job failed; asking again in ${retryMs} ms`, answer.error);
        await sleep(this.options.clock, retryMs, this.closing.signal).catch(() => undefined);
        retryMs = Math.min(retryMs * 2, 30_000);
        continue;
      }
      retryMs = this.options.retryMs ?? 1_000;
      const ticket = answer.ticket;
      if (!ticket || this.closed) continue;
      const board = ticket.board;
      // A health check holds the whole board: no job of it starts here until it is done.
      const taken = ticket.kind === 'job' ? 1 : this.capacity(board);
      this.busy.set(board, (this.busy.get(board) ?? 0) + taken);
      const job =
        ticket.kind === 'job'
          ? this.runJob(ticket).catch((err: unknown) => this.options.logError(`job ${ticket.jobId} could not be reported`, err))
          : this.runHealthCheck(ticket);
      this.running.add(job);
      void job.finally(() => {
        this.running.delete(job);
        const left = (this.busy.get(board) ?? taken) - taken;
        if (left > 0) this.busy.set(board, left);
        else this.busy.delete(board);
        // Look again: the board has room (claimed for by a claim in flight, or by a new one).
        this.wakeClaims();
      });
    }
  }

  /** An administrator's health check of one of this worker's boards; the board takes no job until the backend is done. Never rejects. */
  private async runHealthCheck(ticket: HealthCheckTicket): Promise<void> {
    const { report, settled } = runWorkerHealthCheck(ticket, this.options.boardFor(ticket.board), { clock: this.options.clock, signal: this.closing.signal });
    try {
      const outcome = await report;
      // Stopped by our own shutdown: no outcome; the server's request lapses (as a job is left interrupted).
      if (!this.closed) await this.options.link.healthCheckDone(ticket.checkId, outcome);
    } catch (err) {
      this.options.logError(`the outcome of health check ${ticket.checkId} on ${ticket.board} could not be reported`, err);
    }
    await settled;
  }

  private async runJob(ticket: JobTicket): Promise<void> {
    const { link } = this.options;
    const target = this.options.boardFor(ticket.board);
    if (!target) {
      await link.finish(ticket.jobId, failed('unavailable', `board ${ticket.board} is not served by this worker any more`));
      return;
    }
    let image: FirmwareImage;
    try {
      image = await this.firmwareOf(ticket);
    } catch (err) {
      await link.finish(ticket.jobId, failed('internal', (err as Error).message));
      return;
    }
    if (ticket.debug) {
      const outcome = await runDebugJob({ ...ticket, debug: ticket.debug }, target, image, {
        clock: this.options.clock,
        link,
        ordinaryDeadlineMs: this.deadlineMs(ticket.uartSeconds),
        heartbeatMs: this.options.heartbeatMs ?? 2_000,
        retryMs: this.options.retryMs ?? 1_000,
        onStarted: () => this.markStarted(ticket.jobId),
        closing: this.closing.signal,
        logError: this.options.logError,
      });
      await this.options.afterJob?.(ticket.board, target.used?.() ?? target.backend);
      if (!this.closed) await link.finish(ticket.jobId, outcome);
      return;
    }
    const reporter = new UartReporter(ticket.jobId, link, this.options.logError);
    let device: Device | undefined;
    const stop = (reason: string) => this.dispatcher.cancel(ticket.jobId, reason);
    const unwatch = link.watch?.(ticket.jobId, (push) => stop(push.reason));
    // Serial input is fetched once reset is released (input queued while flashing waits for it).
    const inputEnded = new AbortController();
    let inputPump: Promise<void> = Promise.resolve();
    const { clock } = this.options;
    const endRenewals = renewClaim(link, ticket.jobId, { clock, everyMs: this.options.heartbeatMs ?? 2_000, onStop: stop, logError: this.options.logError });
    let outcome: WorkerJobOutcome;
    try {
      const run = await this.dispatcher.dispatch({
        jobId: ticket.jobId,
        board: target.board,
        ...(ticket.instance === undefined ? {} : { instance: ticket.instance }),
        backend: target.backend,
        image,
        uartSeconds: ticket.uartSeconds,
        maxUartBytes: ticket.maxUartBytes,
        onPhase: async (phase) => {
          if (phase === 'flashing') return this.markStarted(ticket.jobId);
          const control = await link.running(ticket.jobId);
          if (control.stop !== null) stop(control.stop);
          inputPump = this.pumpSerialInput(ticket.jobId, () => device, inputEnded.signal, stop);
        },
        onUart: (soFar) => reporter.report(soFar),
        onOpen: (opened) => {
          device = opened;
        },
      });
      outcome = doneOutcome(run);
    } catch (err) {
      outcome =
        err instanceof BackendError
          ? { state: 'failed', failure: { kind: err.kind, message: jobFailureDetail(err) }, uart: reporter.capture() }
          : { state: 'failed', failure: { kind: 'internal', message: 'the bench failed unexpectedly while running this job' }, uart: reporter.capture() };
      if (!(err instanceof BackendError)) this.options.logError(`job ${ticket.jobId} failed unexpectedly`, err);
    } finally {
      endRenewals();
      unwatch?.();
      inputEnded.abort();
      device = undefined;
      await inputPump;
    }
    await reporter.flushed();
    await this.options.afterJob?.(ticket.board, target.used?.() ?? target.backend);
    // Stopped by our own shutdown: left for the server to fail as interrupted (see close()).
    if (this.closed) return;
    await link.finish(ticket.jobId, outcome);
  }

  /**
   * Writes a running job's serial input to its device, in order, until `signal` aborts (the job
   * ended) or the server says the job is no longer ours. Each input is written at most once: the
   * next fetch acknowledges it, and one sent again after a lost answer is skipped by its number.
   * An input the device refuses (it closed as the job ended) is logged and dropped. Never rejects.
   */
  private async pumpSerialInput(jobId: string, device: () => Device | undefined, signal: AbortSignal, stop: (reason: string) => void): Promise<void> {
    const baseRetryMs = this.options.retryMs ?? 1_000;
    let retryMs = baseRetryMs;
    let writtenThrough = 0;
    while (!signal.aborted) {
      let batch: SerialInputBatch;
      try {
        batch = await this.options.link.input(jobId, writtenThrough, signal);
        retryMs = baseRetryMs;
      } catch (err) {
        if (signal.aborted) return;
        this.options.logError(`fetching the serial input of job ${jobId} failed; asking again in ${retryMs} ms`, err);
        await sleep(this.options.clock, retryMs, signal).catch(() => undefined);
        retryMs = Math.min(retryMs * 2, 30_000);
        continue;
      }
      if (batch.lost) return;
      // Asked to stop (its agent cancelled it): heard here at once, not at the next claim renewal.
      if (batch.stop !== undefined) return stop(batch.stop);
      for (const input of batch.inputs) {
        if (input.seq <= writtenThrough) continue;
        try {
          const open = device();
          if (!open) throw new BackendError('unavailable', 'the device is closed');
          await open.writeUart(input.bytes);
        } catch (err) {
          this.options.logError(`serial input ${input.seq} of job ${jobId} (${input.bytes.length} bytes) could not be written; dropped`, err);
        }
        writtenThrough = input.seq;
      }
    }
  }

  /** The ticket's firmware, checked against the sha256 it was submitted with. */
  private async firmwareOf(ticket: JobTicket): Promise<FirmwareImage> {
    const bytes = await this.options.link.firmware(ticket).catch((err: unknown) => {
      throw new Error(`the firmware ${ticket.firmwareSha256} of this job could not be fetched: ${(err as Error).message}`);
    });
    let image: FirmwareImage;
    try {
      image = loadFirmwareImage(bytes);
    } catch (err) {
      throw new Error(`the stored firmware of this job no longer parses: ${(err as Error).message}`);
    }
    if (image.sha256 !== ticket.firmwareSha256) {
      throw new Error(`the stored firmware of this job is corrupted (sha256 ${image.sha256}, expected ${ticket.firmwareSha256})`);
    }
    return image;
  }
}

function failed(kind: BackendError['kind'], message: string): WorkerJobOutcome {
  return { state: 'failed', failure: { kind, message }, uart: null };
}

function doneOutcome(run: FirmwareRun): WorkerJobOutcome {
  return { state: 'done', uart: run, stop: run.stop, flashMs: run.flashMs, runMs: run.runMs };
}

/**
 * The most claims a worker waits in at once: the server takes four per worker (decision 0470,
 * `MAX_WAITING_CLAIMS_PER_WORKER`), one of them left for a claim it has not yet seen end.
 */
const MAX_CLAIMS_IN_FLIGHT = 3;

/** A claim in flight: the boards it asks for, and its answer (a task, none, or why it failed). */
interface Claim {
  boards: readonly string[];
  answer: Promise<{ claim: Claim; ticket: WorkerTask | undefined } | { claim: Claim; error: unknown }>;
}
