import type { Board } from '../../boards/board-schema.js';
import { type Backend, BackendError, type FirmwareImage } from '../../backends/backend.js';
import { loadFirmwareImage } from '../../backends/image-check.js';
import { type ElfFile, ElfError, loadableSegments, machineName, parseElf } from '../../core/elf.js';
import type { FirmwareRun } from '../../harness/run-firmware.js';
import type { UploadedFile } from '../http/form-schema.js';
import type { AgentRecord, ElfSummary, JobOutcome, JobRecord, UartRecord } from '../store/bench-store.js';
import { type BenchDeps, newId } from './bench-deps.js';
import { BenchError } from './bench-errors.js';
import type { JobBody } from './bench-schemas.js';
import { jobBody } from './bench-views.js';
import type { BoardAccess } from './board-access.js';
import { boardHealthControlOf } from './board-health-control.js';
import { jobFailureDetail } from './job-failure-detail.js';
import { JobUartKeeper, uartRecordOf } from './job-uart-keeper.js';
import type { SessionLeases } from './session-leases.js';

type FlashJobsDeps = Pick<BenchDeps, 'clock' | 'store' | 'blobs' | 'boards' | 'dispatcher' | 'live' | 'limits' | 'logger' | 'checkImage'> & {
  access: BoardAccess;
  sessions: SessionLeases;
};

/**
 * Flash jobs: accepted (firmware checked, board usable, lease and queue rules kept by the
 * store), handed to the dispatcher, and their outcome recorded when they settle.
 */
export class FlashJobs {
  private readonly jobsInFlight = new Set<Promise<void>>();
  private closing = false;

  constructor(private readonly deps: FlashJobsDeps) {}

  private now(): number {
    return this.deps.clock.nowMs();
  }

  /**
   * After a (re)start: runs the jobs the last run left waiting again, failing (as `internal`)
   * those whose stored firmware is missing, no longer parses or is corrupted.
   */
  async requeue(jobs: readonly JobRecord[]): Promise<void> {
    for (const job of jobs) {
      const bytes = await this.deps.blobs.get(job.firmware.sha256);
      if (!bytes) {
        await this.finishFailed(job.jobId, 'internal', `the firmware ${job.firmware.sha256} of this job is missing from the blob store`);
        continue;
      }
      let image: FirmwareImage;
      try {
        image = loadFirmwareImage(bytes);
      } catch (err) {
        await this.finishFailed(job.jobId, 'internal', `the stored firmware of this job no longer parses: ${(err as Error).message}`);
        continue;
      }
      if (image.sha256 !== job.firmware.sha256) {
        await this.finishFailed(job.jobId, 'internal', `the stored firmware of this job is corrupted (sha256 ${image.sha256}, expected ${job.firmware.sha256})`);
        continue;
      }
      this.launch(job, image);
    }
  }

  /**
   * Stops the dispatcher and waits for every job's record. Jobs cancelled by shutdown keep their
   * state (a running one saves its UART first): the next start fails the running ones as
   * `interrupted`, with that UART, and runs the queued ones, exactly as after a crash.
   */
  async close(): Promise<void> {
    this.closing = true;
    await this.deps.dispatcher.close();
    await Promise.all([...this.jobsInFlight]);
  }

  async submitFlash(
    agent: AgentRecord,
    input: { board: string; firmware: UploadedFile; uartSeconds: number; session: string },
  ): Promise<JobBody> {
    const board = this.deps.access.knownBoard(input.board);
    const { firmware } = input;
    const field = { name: 'firmware', input: firmware.filename };
    let elf: ElfFile;
    try {
      elf = parseElf(firmware.bytes);
    } catch (err) {
      if (err instanceof ElfError) throw new BenchError('firmware_invalid', `not a loadable ELF: ${err.message}`, { field });
      throw err;
    }
    const image: FirmwareImage = { bytes: firmware.bytes, sha256: firmware.sha256, elf };
    try {
      this.deps.checkImage(image, board);
    } catch (err) {
      if (err instanceof BackendError && err.kind === 'bad-image') {
        throw new BenchError('firmware_invalid', `cannot run on ${board.id}: ${err.message}`, { field });
      }
      throw err;
    }
    await this.deps.access.usable(board.id);

    const nowMs = this.now();
    const job: JobRecord = {
      jobId: newId('job'),
      agentId: agent.agentId,
      board: board.id,
      sessionId: input.session === '' ? null : input.session,
      state: 'queued',
      firmware: { sha256: firmware.sha256, sizeBytes: firmware.sizeBytes, elf: elfSummary(elf) },
      uartSeconds: input.uartSeconds,
      uart: null,
      stop: null,
      failure: null,
      createdAtMs: nowMs,
      startedAtMs: null,
      runningAtMs: null,
      finishedAtMs: null,
      flashMs: null,
      runMs: null,
    };
    const result = await this.deps.store.createJob(job, { maxQueuedPerBoard: this.deps.limits.maxQueuedJobsPerBoard, nowMs });
    switch (result.kind) {
      case 'created':
        break;
      case 'session-not-found':
        throw new BenchError('session_not_found', `session ${input.session} not found`);
      case 'session-not-active':
        throw new BenchError('session_not_active', `session ${input.session} is ${result.session.state}, not active: open a new session`);
      case 'session-other-board':
        throw new BenchError('session_other_board', `session ${input.session} holds board ${result.session.board}, not ${input.board}`);
      case 'board-leased':
        throw await this.deps.access.leasedConflict(result.lease, agent);
      case 'queue-full':
        throw new BenchError(
          'queue_full',
          `board ${input.board} already has ${result.queued} jobs waiting (the limit is ${this.deps.limits.maxQueuedJobsPerBoard}); retry after some finish`,
          { retryAfterSeconds: 5 },
        );
    }
    try {
      await this.deps.blobs.put(firmware.sha256, firmware.bytes);
    } catch (err) {
      this.deps.logger.error(`storing firmware ${firmware.sha256} failed`, err);
      await this.finishFailed(job.jobId, 'internal', 'the server could not store the firmware; try again');
      throw err;
    }
    this.launch(result.job, image);
    return jobBody(result.job);
  }

  async getJob(agent: AgentRecord, jobId: string): Promise<JobBody> {
    const job = await this.deps.store.getJob(jobId);
    if (!job || job.agentId !== agent.agentId) throw new BenchError('job_not_found', `job ${jobId} not found`);
    return jobBody(job);
  }

  /**
   * Hands a queued job to the dispatcher and records its outcome when it settles. The board's
   * availability is asked again when the job leaves the queue (`gatedBackend`): a job queued on a
   * board that went offline meanwhile fails as `unavailable` with the reason, it does not wait.
   * What the job prints is saved while it runs and kept whatever stops it (decision 0212): a
   * failed job (cancelled, deadline, backend failure) has the UART captured up to its failure;
   * at shutdown it is saved for the next start, which fails the job as `interrupted`.
   */
  private launch(job: JobRecord, image: FirmwareImage): void {
    const board = this.deps.boards.board(job.board);
    // The dispatcher starts the board's next job once this one's outcome is in the store (one job per board there).
    let markRecorded: () => void = () => undefined;
    const recorded = new Promise<void>((resolve) => (markRecorded = resolve));
    const run = async () => {
      if (!board) {
        await this.finishFailed(job.jobId, 'unavailable', `board ${job.board} is not in this server's catalog any more`);
        return;
      }
      const uart = new JobUartKeeper({
        jobId: job.jobId,
        clock: this.deps.clock,
        store: this.deps.store,
        logger: this.deps.logger,
        maxUartChunksPerJob: this.deps.limits.maxUartChunksPerJob,
        live: this.deps.live,
      });
      let detachInput: () => void = () => undefined;
      // Dispatched at once (no await before it), so jobs keep their submission order.
      const gated = this.gatedBackend(board);
      let outcome: FirmwareRun;
      try {
        outcome = await this.deps.dispatcher.dispatch({
          jobId: job.jobId,
          board,
          backend: gated.backend,
          image,
          uartSeconds: job.uartSeconds,
          maxUartBytes: this.deps.limits.maxUartBytesPerJob,
          onPhase: async (phase) => {
            await this.deps.store.markJobPhase(job.jobId, phase, this.now());
            this.deps.live.publishState(job.jobId, phase);
          },
          onUart: uart.onUart,
          onOpen: (device) => {
            detachInput = this.deps.live.attachInput(job.jobId, (bytes) => device.writeUart(bytes));
          },
          recorded: () => recorded,
        });
      } catch (err) {
        detachInput();
        await uart.stop();
        await this.afterJobOn(board.id, gated.used());
        if (this.closing) {
          await uart.saveAndStop();
          return;
        }
        if (err instanceof BackendError) {
          await this.finishFailed(job.jobId, err.kind, jobFailureDetail(err), uart.record());
        } else {
          this.deps.logger.error(`job ${job.jobId} failed unexpectedly`, err);
          await this.finishFailed(job.jobId, 'internal', 'the bench failed unexpectedly while running this job', uart.record());
        }
        return;
      }
      detachInput();
      await uart.stop();
      await this.afterJobOn(board.id, gated.used());
      if (this.closing) return;
      await this.finish(job.jobId, {
        state: 'done',
        nowMs: this.now(),
        uart: uartRecordOf(outcome, this.deps.limits.maxUartChunksPerJob),
        stop: outcome.stop,
        flashMs: outcome.flashMs,
        runMs: outcome.runMs,
      });
    };
    const { sessionId } = job;
    const { sessions } = this.deps;
    if (sessionId !== null) sessions.trackJob(sessionId, job.jobId);
    const tracked = run()
      .catch((err: unknown) => this.deps.logger.error(`recording the outcome of job ${job.jobId} failed`, err))
      .finally(markRecorded)
      .then(() => sessions.rearmAfterJob(sessionId))
      .finally(() => {
        if (sessionId !== null) sessions.untrackJob(sessionId, job.jobId);
      });
    this.jobsInFlight.add(tracked);
    void tracked.finally(() => this.jobsInFlight.delete(tracked));
  }

  /**
   * The backend a queued job runs on: when the dispatcher opens the board, its availability is
   * asked again (cached as for listings) and an offline board fails the job with the reason.
   * With `--backend auto` the job runs on whichever backend serves the board at that moment.
   */
  private gatedBackend(board: Board): { backend: Backend; used: () => Backend | undefined } {
    let used: Backend | undefined;
    const live = this.deps.boards;
    const { healthChecks } = this.deps.access;
    const current = async (): Promise<Backend> => {
      // A job accepted just as an administrator started a health check waits for the check to
      // end (the board is the check's until then), then sees the board as the check left it.
      await healthChecks.get(board.id)?.done;
      const now = await live.get(board.id);
      if (!now.backend) throw new BackendError('unavailable', `board ${board.id} is offline: ${now.offlineReason ?? 'no backend'}`);
      return now.backend;
    };
    const backend: Backend = {
      // Named after the backend that ran it, or that serves the board as far as we know yet
      // (the dispatcher names it in timeout messages).
      get name() {
        return (used ?? live.lastKnown(board.id)?.backend)?.name ?? 'mock';
      },
      availability: async (b) => (await current()).availability(b),
      open: async (b, options) => {
        used = await current();
        return used.open(b, options);
      },
      // The job deadline is set before the board is opened: from the backend serving the board now.
      jobBudgetMs: (b) => (used ?? live.lastKnown(board.id)?.backend)?.jobBudgetMs?.(b) ?? { flashMs: 0, resetMs: 0 },
    };
    return { backend, used: () => used };
  }

  /**
   * A backend that keeps board health may just have counted a failure or quarantined the board:
   * its availability is asked again now (not after the cache window), so listings show it at
   * once and the operator's log says so when it happens. The check never rejects.
   */
  private async afterJobOn(boardId: string, backend: Backend | undefined): Promise<void> {
    if (!backend || !boardHealthControlOf(backend)) return;
    this.deps.boards.invalidate(boardId);
    await this.deps.boards.get(boardId);
  }

  private async finishFailed(
    jobId: string,
    kind: NonNullable<JobRecord['failure']>['kind'],
    message: string,
    uart: UartRecord | null = null,
  ): Promise<void> {
    await this.finish(jobId, { state: 'failed', nowMs: this.now(), failure: { kind, message }, uart });
  }

  /** Records a job's outcome and tells live readers the state it ended in (the first outcome stands). */
  private async finish(jobId: string, outcome: JobOutcome): Promise<void> {
    const finished = await this.deps.store.finishJob(jobId, outcome);
    this.deps.live.publishState(jobId, finished.state);
  }

  /** Waits until no job is in flight (tests and orderly shutdown). */
  async idle(): Promise<void> {
    while (this.jobsInFlight.size > 0) await Promise.all([...this.jobsInFlight]);
  }
}

function elfSummary(elf: ElfFile): ElfSummary {
  return {
    machine: elf.machine,
    machineName: machineName(elf.machine),
    entry: elf.entry,
    segments: loadableSegments(elf).map((s) => ({ paddr: s.paddr, vaddr: s.vaddr, fileSizeBytes: s.fileSizeBytes, memSizeBytes: s.memSizeBytes })),
  };
}
