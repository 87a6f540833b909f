import { BackendError, type FirmwareImage } from '../../../backends/backend.js';
import { type ElfFile, ElfError, loadableSegments, machineName, parseElf } from '../../../core/elf.js';
import type { UploadedFile } from '../../../wire/form-fields.js';
import { type AgentRecord, type ElfSummary, instanceOf, type JobRecord } from '../../storage/bench/bench-store.js';
import { type BenchDeps, newId } from './bench-deps.js';
import { BenchError } from './bench-errors.js';
import { type BoardAccess, healthCheckRunning } from './board-access.js';

type FlashJobsDeps = Pick<BenchDeps, 'clock' | 'store' | 'blobs' | 'gateway' | 'limits' | 'logger' | 'checkImage'> & {
  access: BoardAccess;
};

/**
 * Flash jobs: accepted (firmware checked and stored, board usable, lease and queue rules kept by
 * the store) into the store's queue, where a worker claims them (harness/worker/bench-worker.ts
 * through worker-gateway.ts) and records their outcome.
 */
export class FlashJobs {
  constructor(private readonly deps: FlashJobsDeps) {}

  private now(): number {
    return this.deps.clock.nowMs();
  }

  async submitFlash(
    agent: AgentRecord,
    input: { board: string; firmware: UploadedFile; uartSeconds: number; session: string },
  ): Promise<JobRecord> {
    // A board (its pool) or one instance of it asked for explicitly (decision 0510).
    const { board, instance } = await this.deps.access.target(input.board);
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
    // The store refuses a board under a health check as it queues the job (decision 0860).
    await this.deps.access.usable(board.id, { storeRefusesChecked: true });
    // Stored before the job exists (content-addressed, so a refused job leaves only a blob the
    // next identical upload reuses): no worker can claim a job whose firmware is not there yet.
    try {
      await this.deps.blobs.put(firmware.sha256, firmware.bytes);
    } catch (err) {
      this.deps.logger.error(`storing firmware ${firmware.sha256} failed`, err);
      throw new Error('the server could not store the firmware', { cause: err });
    }

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
      workerId: null,
      cancelReason: null,
      ...(instance === undefined ? {} : { instance }),
    };
    // A session-less job takes a free instance of the pool; a session's job runs on the session's.
    const instances = input.session === '' && instance === undefined ? await this.deps.access.handOut(board.id) : undefined;
    // No session id holds a NUL, and PostgreSQL cannot even compare a text with one (a 500 for any agent).
    const result = input.session.includes('\u0000')
      ? ({ kind: 'session-not-found' } as const)
      : await this.deps.store.createJob(job, { maxQueuedPerBoard: this.deps.limits.maxQueuedJobsPerBoard, nowMs, instances });
    switch (result.kind) {
      case 'created':
        break;
      case 'session-not-found':
        throw new BenchError('session_not_found', `session ${input.session} not found`);
      case 'session-not-active':
        throw new BenchError('session_not_active', `session ${input.session} is ${result.session.state}, not active: open a new session`);
      case 'session-other-board':
        throw new BenchError(
          'session_other_board',
          result.session.board === board.id
            ? `session ${input.session} holds instance ${instanceOf(result.session)} of board ${board.id}, not ${input.board}: its jobs run on its instance`
            : `session ${input.session} holds board ${result.session.board}, not ${input.board}`,
        );
      case 'board-health-check':
        throw healthCheckRunning(board.id, result.requestedAtMs);
      case 'board-leased':
        throw await this.deps.access.leasedConflict(result.lease, agent);
      case 'queue-full':
        throw new BenchError(
          'queue_full',
          `board ${input.board} already has ${result.queued} jobs waiting (the limit is ${this.deps.limits.maxQueuedJobsPerBoard}); retry after some finish`,
          { retryAfterSeconds: 5 },
        );
    }
    // The first of its transitions in the log (the others are logged as workers report them).
    this.deps.logger.info(`job ${result.job.jobId} queued`, { jobId: result.job.jobId, state: 'queued', board: result.job.board });
    // A worker may claim the job the moment it is queued: it finds the firmware there.
    this.deps.gateway.jobQueued(result.job.board);
    return result.job;
  }

  async getJob(agent: AgentRecord, jobId: string): Promise<JobRecord> {
    const job = await this.deps.store.getJob(jobId);
    if (!job || job.agentId !== agent.agentId) throw new BenchError('job_not_found', `job ${jobId} not found`);
    return job;
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
