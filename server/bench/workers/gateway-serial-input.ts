import type { SerialInputBatch } from '../../../harness/worker/worker-link.js';
import type { StoreSignals } from '../domain/store-signals.js';
import { takeInputOrStop } from './input-or-stop.js';
import type { WorkerGatewayDeps } from './worker-gateway-deps.js';

/** The most serial input one fetch hands a worker, bytes (one input is never split). */
export const MAX_SERIAL_INPUT_BATCH_BYTES = 64 * 1024;

/**
 * The worker gateway's side of serial input (decision 0420): a worker's fetch is a long poll woken
 * at once by input queued through this process and looking at the store at the signals' poll for
 * input queued through another replica; an agent hears when its input was written.
 */
export class GatewaySerialInput {
  /**
   * Jobs running through here, by the worker holding them, that were never sent input nor asked to
   * stop when they started running, with nothing queued for them through here since: their worker's
   * first fetch has nothing to take (decision 0980).
   */
  private readonly quiet = new Map<string, string>();
  /**
   * The `asking` tokens of jobs whose `running` is being written: input queued here meanwhile
   * marks them, since the store's answer may have been read before that input was committed.
   * Only jobs being asked about are kept, so input for jobs running elsewhere leaves nothing here.
   */
  private readonly askingRunning = new Map<string, Set<{ moved: boolean }>>();

  constructor(
    private readonly deps: Pick<WorkerGatewayDeps, 'store' | 'clock'>,
    private readonly signals: StoreSignals,
  ) {}

  /** Taken before the store is asked to mark `jobId` running; given back to `running` (whatever the store answered, or if it threw). */
  asking(jobId: string): { moved: boolean } {
    const asked = { moved: false };
    const tokens = this.askingRunning.get(jobId) ?? new Set();
    tokens.add(asked);
    this.askingRunning.set(jobId, tokens);
    return asked;
  }

  /**
   * Job `jobId` of `workerId` started running (`asked` from `asking`); `nothingYet`: the store said
   * it had no input and no stop asked. Quiet only when nothing was queued through here since it was
   * asked: input committed after the store's look was queued after `asking`, so it moved the token.
   */
  running(jobId: string, workerId: string, asked: { moved: boolean }, nothingYet: boolean): void {
    const tokens = this.askingRunning.get(jobId);
    tokens?.delete(asked);
    if (tokens?.size === 0) this.askingRunning.delete(jobId);
    if (nothingYet && !asked.moved) this.quiet.set(jobId, workerId);
    else this.quiet.delete(jobId);
  }

  /** The job ended, or this process let it go. */
  forget(jobId: string): void {
    this.quiet.delete(jobId);
  }

  /**
   * Serial input for a job `workerId` holds (a long poll until some is queued or `signal` aborts),
   * acknowledging what it wrote through `writtenThroughSeq`. The first fetch of a quiet job waits
   * before it looks: input or a cancel through here wakes it, one through another replica is seen
   * at the poll, as any that comes after a look (a statement fewer on nearly every job, decision 0980).
   */
  async fetch(workerId: string, jobId: string, writtenThroughSeq: number, signal: AbortSignal): Promise<SerialInputBatch> {
    const waitFirst = this.quiet.get(jobId) === workerId && writtenThroughSeq === 0;
    this.quiet.delete(jobId);
    const taken = await this.signals.until(
      `input:${jobId}`,
      signal,
      async () => {
        const found = await takeInputOrStop(this.deps.store, jobId, { workerId, writtenThroughSeq, maxBytes: MAX_SERIAL_INPUT_BATCH_BYTES });
        // What the worker acknowledged may answer an agent waiting to hear its input was written.
        this.signals.notify(`written:${jobId}`);
        return found;
      },
      { waitFirst },
    );
    return taken ?? { inputs: [], lost: false };
  }

  /** Serial input was queued for `jobId` (or it was asked to stop): its worker's waiting fetch takes it now. */
  queued(jobId: string): void {
    for (const asked of this.askingRunning.get(jobId) ?? []) asked.moved = true;
    this.quiet.delete(jobId);
    this.signals.notify(`input:${jobId}`);
  }

  /** Whether the job's worker wrote input `seq` within `waitMs` (host ms, injected clock). */
  async written(jobId: string, seq: number, waitMs: number, signal: AbortSignal): Promise<boolean> {
    const timeout = new AbortController();
    const timer = this.deps.clock.setTimeout(() => timeout.abort(), waitMs);
    try {
      const written = await this.signals.until(`written:${jobId}`, AbortSignal.any([signal, timeout.signal]), async () =>
        (await this.deps.store.serialInput.writtenThrough(jobId)) >= seq ? true : undefined,
      );
      return written === true;
    } finally {
      this.deps.clock.clearTimeout(timer);
    }
  }
}
