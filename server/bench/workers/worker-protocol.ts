import type { UartChunk } from '../../../backends/backend.js';
import type { Clock } from '../../../core/clock.js';
import type { HealthCheckReport, SerialInputBatch, UartCaptureReport, WorkerJobOutcome, WorkerTask } from '../../../harness/worker/worker-link.js';
import type { BoardHealthRecord } from '../../storage/bench/board-health-store.js';
import type { Logger } from '../../http/logger.js';
import type { BenchStore, JobRecord } from '../../storage/bench/bench-store.js';
import type { WorkerBoardReport, WorkerRecord } from '../../storage/bench/worker-registry.js';
import type { WireCapture, WireChunk } from '../../../wire/worker/worker-schemas.js';
import { BenchError } from '../domain/bench-errors.js';
import type { LiveBoards } from '../domain/live-boards.js';
import { LongPollSlots } from '../domain/long-poll-slots.js';
import type { WorkerGateway } from './worker-gateway.js';
import type { WorkerRoster } from './worker-roster.js';

/** The timings a server gives its workers (host seconds). */
export interface WorkerTimings {
  /** How often a worker sends a heartbeat. Default 5. */
  heartbeatSeconds: number;
  /** Without a heartbeat for this long a worker and its boards are offline. Default 15. */
  offlineAfterSeconds: number;
  /** A remote worker's claim on a running job lapses unless renewed within this. Default 30. */
  claimSeconds: number;
}

export const defaultWorkerTimings: WorkerTimings = { heartbeatSeconds: 5, offlineAfterSeconds: 15, claimSeconds: 30 };

/**
 * The most claims one worker waits in at once on one server process (decision 0470): a worker
 * claims in one loop, and a few more cover a claim whose client gave up before the server noticed.
 */
export const MAX_WAITING_CLAIMS_PER_WORKER = 4;
/** The most serial-input fetches one worker waits in at once for one job (it runs one per job). */
export const MAX_WAITING_INPUT_FETCHES_PER_JOB = 2;

export const chunksFromWire = (chunks: readonly WireChunk[]): UartChunk[] =>
  chunks.map((c) => ({ atNanos: c.at_ns, bytes: new Uint8Array(Buffer.from(c.base64, 'base64')) }));

export const captureFromWire = (c: WireCapture): UartCaptureReport => ({
  timeBase: c.time_base,
  clockSource: c.clock_source ?? undefined,
  droppedUartBytes: c.dropped_bytes,
  uart: chunksFromWire(c.chunks),
});

/**
 * What a remote worker may do, checked: announce only boards of this server's catalog, claim only
 * boards it announced, fetch the firmware only of a job it holds; the gateway and the store check
 * that reports come from the worker holding the job. Every call records that the worker was heard from.
 */
export class WorkerProtocol {
  /** Long polls open in this process, by worker and what they wait for (decision 0470). */
  private readonly waiting = new LongPollSlots();

  constructor(
    private readonly deps: { clock: Clock; store: BenchStore; gateway: WorkerGateway; boards: LiveBoards; roster?: WorkerRoster; logger: Logger; timings: WorkerTimings },
  ) {}

  private now(): number {
    return this.deps.clock.nowMs();
  }

  /** A worker (re)starting: its boards, and the jobs it still runs; the others it held fail as interrupted. */
  async announce(worker: WorkerRecord, boards: readonly WorkerBoardReport[], runningJobs: readonly string[]): Promise<{ interrupted: JobRecord[] }> {
    const unknown = boards.filter((b) => !this.deps.boards.board(b.board)).map((b) => b.board);
    if (unknown.length > 0) {
      throw new BenchError('board_not_served', `this server's catalog has no board ${unknown.join(', ')}; a worker announces only boards the server lists (GET /api/v1/boards)`);
    }
    const nowMs = this.now();
    await this.deps.store.workers.heardFrom(worker.workerId, { nowMs, boards });
    this.deps.gateway.reported(worker.workerId, boards);
    this.deps.roster?.invalidate();
    const interrupted = await this.deps.store.releaseWorkerJobs(worker.workerId, {
      reason: `worker ${worker.label} (${worker.workerId}) started again and no longer runs this job`,
      nowMs,
      keep: runningJobs,
    });
    for (const board of boards) this.deps.boards.invalidate(board.board);
    // Boards those jobs held are free for their next job.
    for (const job of interrupted) this.deps.gateway.jobQueued(job.board);
    this.deps.logger.info(`worker ${worker.label} (${worker.workerId}) announced ${boards.length} board(s)${interrupted.length ? `; ${interrupted.length} job(s) it no longer runs failed as interrupted` : ''}`);
    return { interrupted };
  }

  async heartbeat(worker: WorkerRecord, boards: readonly WorkerBoardReport[] | undefined): Promise<void> {
    if (boards) this.checkServes(worker, boards.map((b) => b.board));
    await this.deps.store.workers.heardFrom(worker.workerId, { nowMs: this.now(), boards });
    if (boards) {
      this.deps.gateway.reported(worker.workerId, boards);
      this.deps.roster?.invalidate();
    }
    if (boards) for (const board of boards) this.deps.boards.invalidate(board.board);
  }

  /** Waits up to `waitMs` for a task on `boards`; undefined when none came (or the client left). */
  async claim(worker: WorkerRecord, boards: readonly string[], waitMs: number, signal: AbortSignal): Promise<WorkerTask | undefined> {
    this.checkServes(worker, boards);
    await this.deps.store.workers.heardFrom(worker.workerId, { nowMs: this.now() });
    return this.waiting.run(`claim:${worker.workerId}`, MAX_WAITING_CLAIMS_PER_WORKER, `worker ${worker.workerId} already waits in ${MAX_WAITING_CLAIMS_PER_WORKER} claims`, async () => {
      const timeout = new AbortController();
      const timer = this.deps.clock.setTimeout(() => timeout.abort(), waitMs);
      const both = AbortSignal.any([signal, timeout.signal]);
      try {
        // Its boards as this request was authenticated with: the claim reads them no more (decision 0860).
        const link = this.deps.gateway.linkFor(worker.workerId, { claimMs: this.claimMs(), reports: worker.boards });
        return await link.claim(boards, both);
      } finally {
        this.deps.clock.clearTimeout(timer);
      }
    });
  }

  /** Serial input for a job the worker holds, waiting up to `waitMs` for some; refused when it no longer holds the job. */
  async input(worker: WorkerRecord, jobId: string, writtenThroughSeq: number, waitMs: number, signal: AbortSignal): Promise<Pick<SerialInputBatch, 'inputs' | 'stop'>> {
    await this.heardFrom(worker);
    const why = `worker ${worker.workerId} already waits in ${MAX_WAITING_INPUT_FETCHES_PER_JOB} serial-input fetches of job ${jobId}`;
    return this.waiting.run(`input:${worker.workerId}:${jobId}`, MAX_WAITING_INPUT_FETCHES_PER_JOB, why, async () => {
      const timeout = new AbortController();
      const timer = this.deps.clock.setTimeout(() => timeout.abort(), waitMs);
      try {
        const batch = await this.deps.gateway.input(worker.workerId, jobId, writtenThroughSeq, AbortSignal.any([signal, timeout.signal]));
        if (batch.lost) throw await this.notHeld(worker, jobId);
        return batch;
      } finally {
        this.deps.clock.clearTimeout(timer);
      }
    });
  }

  /** The health the server keeps of a catalog board (public in the board list anyway). */
  async boardHealth(worker: WorkerRecord, boardId: string): Promise<BoardHealthRecord> {
    await this.heardFrom(worker);
    if (!this.deps.boards.board(boardId)) throw new BenchError('board_not_served', `this server's catalog has no board ${boardId}`);
    return this.deps.store.boardHealth.get(boardId);
  }

  /** A worker's backend counted a failure, quarantined or released one of the worker's boards. */
  async putBoardHealth(worker: WorkerRecord, boardId: string, health: BoardHealthRecord): Promise<void> {
    await this.heardFrom(worker);
    this.checkServes(worker, [boardId]);
    await this.deps.store.boardHealth.put(boardId, health);
    // Listings show a quarantine (or its end) at once.
    this.deps.boards.invalidate(boardId);
  }

  /** The outcome of a health check the worker ran; refused when the check is not its own, or ended already. */
  async healthCheckDone(worker: WorkerRecord, checkId: string, report: HealthCheckReport): Promise<void> {
    await this.heardFrom(worker);
    const finished = await this.deps.gateway.healthChecks.done(worker.workerId, checkId, report);
    if (finished) {
      this.deps.boards.invalidate(finished.board);
      return;
    }
    const check = await this.deps.store.healthChecks.get(checkId);
    if (!check || check.workerId !== worker.workerId) throw new BenchError('health_check_not_found', `health check ${checkId} not found among this worker's`);
    throw new BenchError('health_check_not_held', `health check ${checkId} is ${check.state}${check.outcome && !check.outcome.passed ? ` (${check.outcome.reason})` : ''}: its outcome came too late`);
  }

  async firmware(worker: WorkerRecord, jobId: string): Promise<Uint8Array> {
    await this.heldJob(worker, jobId);
    const job = (await this.deps.store.getJob(jobId))!;
    return this.deps.gateway.firmware(job.firmware.sha256);
  }

  async running(worker: WorkerRecord, jobId: string): Promise<{ stop: string | null }> {
    await this.heardFrom(worker);
    await this.ownJob(worker, jobId);
    return this.deps.gateway.running(worker.workerId, jobId);
  }

  async jobHeartbeat(worker: WorkerRecord, jobId: string): Promise<{ stop: string | null }> {
    await this.heardFrom(worker);
    await this.ownJob(worker, jobId);
    return this.deps.gateway.heartbeat(worker.workerId, this.claimMs(), jobId);
  }

  async uart(worker: WorkerRecord, jobId: string, offset: number, capture: WireCapture): Promise<void> {
    await this.heardFrom(worker);
    const report = { ...captureFromWire(capture), offset, chunks: chunksFromWire(capture.chunks) };
    const kept = await this.deps.gateway.uart(worker.workerId, this.claimMs(), jobId, { offset, chunks: report.chunks, timeBase: report.timeBase, clockSource: report.clockSource, droppedUartBytes: report.droppedUartBytes });
    if (!kept) throw await this.notHeld(worker, jobId);
  }

  async finish(worker: WorkerRecord, jobId: string, outcome: WorkerJobOutcome): Promise<JobRecord> {
    await this.heardFrom(worker);
    const before = await this.ownJob(worker, jobId);
    // An outcome for a job that ended otherwise (its claim lapsed, the worker was revoked) came too
    // late: refused, so the worker's log says so; the same outcome again (its answer was lost) is not.
    if ((before.state === 'done' || before.state === 'failed') && !sameOutcome(before, outcome)) {
      const why = before.failure ? ` (${before.failure.kind}: ${before.failure.message})` : '';
      throw new BenchError('job_not_held', `job ${jobId} is ${before.state}${why}: this outcome came too late, the first one stands`);
    }
    const job = await this.deps.gateway.finish(worker.workerId, jobId, outcome);
    if (job.workerId !== worker.workerId) throw await this.notHeld(worker, jobId);
    return job;
  }

  /** How long a remote worker's claim holds without renewal (host ms). */
  private claimMs(): number {
    return this.deps.timings.claimSeconds * 1000;
  }

  private async heardFrom(worker: WorkerRecord): Promise<void> {
    await this.deps.store.workers.heardFrom(worker.workerId, { nowMs: this.now() });
  }

  private checkServes(worker: WorkerRecord, boards: readonly string[]): void {
    const served = new Set(worker.boards.map((b) => b.board));
    const foreign = boards.filter((b) => !served.has(b));
    if (foreign.length > 0) {
      throw new BenchError('board_not_served', `worker ${worker.workerId} did not announce board ${foreign.join(', ')}: announce it first (POST /api/v1/worker/announce)`);
    }
  }

  /**
   * Refuses (404, like a missing job) a job this worker was never given: another worker's job (its
   * existence and state, named in a stop reason, are only for the worker that claimed it) or none
   * at all (the store's finish had no row to answer with: a 500). A job it claimed and lost since
   * (swept, revoked) is answered by the call itself.
   */
  private async ownJob(worker: WorkerRecord, jobId: string): Promise<JobRecord> {
    const job = await this.deps.store.getJob(jobId);
    if (!job || job.workerId !== worker.workerId) throw await this.notHeld(worker, jobId);
    return job;
  }

  private async heldJob(worker: WorkerRecord, jobId: string): Promise<void> {
    const job = await this.deps.store.getJob(jobId);
    if (!job || job.workerId !== worker.workerId || (job.state !== 'flashing' && job.state !== 'running')) throw await this.notHeld(worker, jobId);
  }

  private async notHeld(worker: WorkerRecord, jobId: string): Promise<BenchError> {
    const job = await this.deps.store.getJob(jobId);
    // Another worker's job is answered like a missing one: its existence is not revealed.
    if (!job || (job.workerId !== null && job.workerId !== worker.workerId) || job.workerId === null) {
      return new BenchError('job_not_found', `job ${jobId} not found among this worker's jobs`);
    }
    return new BenchError('job_not_held', `job ${jobId} is ${job.state}: this worker no longer holds it`);
  }
}

/** Whether a stored outcome is the one reported (a report sent again after its answer was lost). */
function sameOutcome(job: JobRecord, outcome: WorkerJobOutcome): boolean {
  if (outcome.state === 'done') return job.state === 'done';
  return job.state === 'failed' && job.failure?.kind === outcome.failure.kind && job.failure.message === outcome.failure.message;
}
