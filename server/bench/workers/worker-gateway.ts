import { sleep } from '../../../core/clock.js';
import type { JobPush, SerialInputBatch, UartReport, WorkerJobOutcome, WorkerLink, WorkerTask } from '../../../harness/worker/worker-link.js';
import { DebugRelay } from '../domain/debug-relay.js';
import { gatewayLink, healthCheckTicket, ticketOf } from './gateway-link.js';
import { GatewayHealthChecks } from './gateway-health-checks.js';
import type { JobOutcome, JobRecord } from '../../storage/bench/bench-store.js';
import type { WorkerBoardReport } from '../../storage/bench/worker-registry.js';
import type { LiveUartChunk } from '../domain/job-live.js';
import { reportedInstances } from '../domain/pool-instances.js';
import { StoreSignals } from '../domain/store-signals.js';
import { chunksOfRecord, holdReport, UART_SAVE_INTERVAL_MS, uartRecordOf, withOffsets } from './uart-record.js';
import { type JobInFlight, recordOf, uartBoundsOf } from './job-in-flight.js';
import { lostJobReason } from './input-or-stop.js';
import { GatewaySerialInput } from './gateway-serial-input.js';
import type { WorkerGatewayDeps } from './worker-gateway-deps.js';
import { failUnhandedJob } from './fail-unhanded-job.js';
import { QuietBoards } from './quiet-boards.js';

/**
 * The server's side of the worker protocol (harness/worker/worker-link.ts), over the store: a
 * claim is a store claim (a long poll woken when a job is queued here, and re-checked on the
 * injected clock for jobs queued through another replica), UART goes to live readers at once and
 * to the store at most every `UART_SAVE_INTERVAL_MS`, and outcomes are recorded only for the
 * worker holding the job. `linkFor` gives the link of one worker; the HTTP routes for remote
 * workers call the same methods.
 */
export class WorkerGateway {
  private readonly inFlight = new Map<string, JobInFlight>();
  /** Jobs whose outcome is being recorded here (out of `inFlight` already, not yet told to live readers). */
  private readonly finishing = new Set<string>();
  /** Set by close(): a waiting claim then answers empty instead of asking a store about to close. */
  private closed = false;
  private readonly waiters = new Set<{ boards: ReadonlySet<string>; wake: () => void }>();
  /** Boards the store said had nothing waiting as a job's end was written here (decision 0980). */
  private readonly quietBoards = new QuietBoards();
  /** The boards each worker last reported through this process. */
  private readonly reports = new Map<string, readonly WorkerBoardReport[]>();
  /** What waiters look for in the store (serial input queued or written, a health check done): woken at once from here. */
  private readonly signals: StoreSignals;

  /** The GDB streams of debug jobs handed out here (issue 32, decision 0560). */
  readonly debug: DebugRelay;
  /** Health checks requested of workers, run by them and waited for here. */
  readonly healthChecks: GatewayHealthChecks;
  /** Serial input fetched by workers, and agents waiting to hear it was written. */
  private readonly serialInput: GatewaySerialInput;

  constructor(private readonly deps: WorkerGatewayDeps) {
    this.signals = new StoreSignals(deps.clock, deps.claimPollMs);
    this.debug = new DebugRelay({ clock: deps.clock, store: deps.store, replicaUrl: deps.replicaUrl ?? (() => null) });
    this.healthChecks = new GatewayHealthChecks(deps, this.signals, (board) => this.jobQueued(board));
    this.serialInput = new GatewaySerialInput(deps, this.signals);
  }

  private now(): number {
    return this.deps.clock.nowMs();
  }

  /** The link of worker `workerId`; `claimMs` null for the worker in this process (claims never lapse); `reports` as for `claim`. */
  linkFor(workerId: string, options: { claimMs: number | null; claimWaitMs?: number; reports?: readonly WorkerBoardReport[] }): WorkerLink {
    return gatewayLink(this, workerId, options, this.deps.clock);
  }

  /** A job was queued on `board`, or the board was freed: a worker waiting for that board claims now. */
  jobQueued(board: string): void {
    this.quietBoards.queued(board);
    this.wakeClaims(board);
  }

  private wakeClaims(board: string): void {
    for (const waiter of [...this.waiters]) if (waiter.boards.has(board)) waiter.wake();
  }

  /** A session closed: its jobs running through this gateway are told to stop at once (the store asked already), and their debug streams end now. */
  sessionClosed(sessionId: string, reason: string): void {
    for (const entry of this.inFlight.values()) {
      if (entry.job.sessionId !== sessionId) continue;
      this.debug.jobStopping(entry.job.jobId, reason);
      for (const watcher of [...entry.watchers]) watcher({ kind: 'stop', reason });
    }
  }

  /**
   * What a job running through this gateway has printed so far, with byte offsets (the store has
   * it up to a second later); undefined for a job not running here.
   */
  uartSoFar(jobId: string): LiveUartChunk[] | undefined {
    const entry = this.inFlight.get(jobId);
    return entry && withOffsets(entry.chunks).map(({ offset, chunk }) => ({ offset, atNanos: chunk.atNanos, bytes: chunk.bytes, timeBase: entry.capture.timeBase }));
  }

  /**
   * Whether the job's outcome is being recorded through this gateway: from before the store's
   * transaction that ends it (and frees its lease) until its live event, with the record, has
   * reached this process's readers, so the store's signal of that end needs no look. A job that
   * merely runs through here is not carried (decision 0720): its worker's outcome may reach another
   * replica (a remote worker's request there), and readers here then hear only the store's signal.
   */
  carries(jobId: string): boolean {
    return this.finishing.has(jobId);
  }

  /** Whether a job of the session is running through this gateway. */
  runsJobsOf(sessionId: string): boolean {
    return [...this.inFlight.values()].some((e) => e.job.sessionId === sessionId);
  }

  /** Tells the workers of jobs asked to stop in the store (a session that expired as a write swept it) to stop now. */
  async pushStoredCancels(): Promise<void> {
    for (const entry of [...this.inFlight.values()]) {
      if (entry.watchers.size === 0 && !this.debug.has(entry.job.jobId)) continue;
      const job = await this.deps.store.getJob(entry.job.jobId);
      if (!job?.cancelReason) continue;
      // A debug stream ends now, with why, not when the worker's outcome comes.
      this.debug.jobStopping(entry.job.jobId, job.cancelReason);
      for (const watcher of [...entry.watchers]) watcher({ kind: 'stop', reason: job.cancelReason });
    }
  }

  /**
   * Forgets the jobs that ended without their worker's outcome coming through here (the sweep
   * failed them when the worker vanished, an administrator revoked it, or it finished through
   * another replica): only an outcome through this gateway removed a job from it, so each such
   * job kept its UART in memory, a save timer, and counted as running for its session, for good.
   */
  async forgetEnded(): Promise<void> {
    for (const [jobId, entry] of [...this.inFlight]) {
      const job = await this.deps.store.getJob(jobId);
      if (job && (job.state === 'flashing' || job.state === 'running')) continue;
      if (this.inFlight.get(jobId) !== entry) continue; // finished meanwhile
      this.debug.jobEnded(jobId, `job ${jobId} ended`);
      if (entry.saveTimer !== undefined) this.deps.clock.clearTimeout(entry.saveTimer);
      entry.saveTimer = undefined;
      this.inFlight.delete(jobId);
      this.serialInput.forget(jobId);
    }
  }

  /** Waits for the UART saves in progress (shutdown: the next start finds what the jobs printed). */
  async close(): Promise<void> {
    for (const entry of this.inFlight.values()) {
      if (entry.saveTimer !== undefined) this.deps.clock.clearTimeout(entry.saveTimer);
      entry.saveTimer = undefined;
      this.save(entry);
    }
    await Promise.all([...this.inFlight.values()].map((e) => e.saving));
    this.closed = true;
    for (const waiter of [...this.waiters]) waiter.wake();
    this.debug.shutdown();
  }

  /** `workerId` reported `boards` through this process (announce, heartbeat): its claims here take its instances from them (decision 0860). */
  reported(workerId: string, boards: readonly WorkerBoardReport[]): void {
    this.reports.set(workerId, boards);
  }

  /** A task for `workerId` on `boards`; its instances from `known` (the row a remote worker's request was authenticated with), its last report here, or the store. */
  async claim(workerId: string, claimMs: number | null, boards: readonly string[], signal: AbortSignal, known?: readonly WorkerBoardReport[]): Promise<WorkerTask | undefined> {
    const wanted = new Set(boards);
    const pollMs = this.deps.claimPollMs;
    // The worker names boards; its jobs are on its instances of them (decision 0510), as it reported them.
    const reports = known ?? this.reports.get(workerId) ?? (await this.deps.store.workers.get(workerId))?.boards ?? [];
    const reported = boards.map((board) => {
      const report = reports.find((r) => r.board === board);
      return { board, instances: report ? reportedInstances(workerId, report) : [board] };
    });
    // Looked at again on every try: an instance quarantined (or released) meanwhile is skipped (or
    // claimed). The store's claim skips an instance under a health check (decision 0606).
    const claimable = async () => {
      const health = this.deps.instanceHealth;
      if (!health) return reported.flatMap((r) => r.instances);
      return (await Promise.all(reported.map((r) => health.unquarantined(r.board, r.instances)))).flat();
    };
    // A check of one instance (decision 0606) is recorded under the instance's id.
    const checkable = [...boards, ...reported.flatMap((r) => r.instances.filter((i) => i !== r.board))];
    // Boards the store said had nothing waiting as the last job on them ended here: the first try
    // waits before it looks (a statement fewer on nearly every job, decision 0980).
    let waitFirst = this.quietBoards.take(boards, this.now());
    while (!signal.aborted && !this.closed) {
      // Listening before looking: a job queued between the look and the wait still wakes us.
      let wake: () => void = () => undefined;
      const woken = new Promise<void>((resolve) => (wake = resolve));
      const waiter = { boards: wanted, wake };
      this.waiters.add(waiter);
      try {
        // No job starts on an instance under an administrator's health check (the claim skips it), so
        // the job is asked for first and the check only when no job came (decision 0801); on
        // PostgreSQL an empty try is one statement too (decision 0860).
        const { job, check } = (waitFirst ? undefined : await this.deps.store.claimTask({ workerId, boards: await claimable(), checkBoards: checkable, nowMs: this.now(), claimMs })) ?? {};
        waitFirst = false;
        if (check) return healthCheckTicket(check);
        if (job) {
          this.started(job, workerId, claimMs);
          const debug = await this.debug.claimed(job, workerId).then(
            (terms) => ({ terms }),
            (err: unknown) => ({ err }),
          );
          if ('terms' in debug) return ticketOf(job, this.deps.limits.maxUartBytesPerJob, debug.terms);
          void failUnhandedJob({ clock: this.deps.clock, logger: this.deps.logger, finish: async (outcome) => {
            await this.finish(workerId, job.jobId, outcome);
            // Its instance is free again: a claim waiting for the board takes the next job now.
            this.jobQueued(job.board);
          } }, job.jobId, debug.err);
          continue;
        }
        const onAbort = () => wake();
        signal.addEventListener('abort', onAbort, { once: true });
        // Aborted while the store was asked: the event has fired already and would never wake us.
        if (signal.aborted) wake();
        await Promise.race([woken, ...(pollMs === undefined ? [] : [sleep(this.deps.clock, pollMs, signal).catch(() => undefined)])]);
        signal.removeEventListener('abort', onAbort);
      } finally {
        this.waiters.delete(waiter);
      }
    }
    return undefined;
  }

  async firmware(sha256: string): Promise<Uint8Array> {
    const bytes = await this.deps.blobs.get(sha256);
    if (!bytes) throw new Error(`the firmware ${sha256} is missing from the blob store`);
    return bytes;
  }

  async running(workerId: string, jobId: string): Promise<{ stop: string | null }> {
    // Read before the store is asked: input queued here while it answers is not missed (decision 0980).
    const asked = this.serialInput.asking(jobId);
    let nothingYet = false;
    try {
      const status = await this.deps.store.markJobRunning(jobId, workerId, this.now());
      if (status.kind === 'lost') return { stop: lostJobReason(jobId, status.state) };
      // Never sent input nor asked to stop: its worker's first fetch need not look (decision 0980).
      nothingYet = this.inFlight.has(jobId) && status.inputSent === false && status.cancelReason === null;
      this.deps.live.publishState(jobId, 'running');
      return { stop: status.cancelReason };
    } finally {
      this.serialInput.running(jobId, workerId, asked, nothingYet);
    }
  }

  /**
   * Renews `workerId`'s claim on the job for `claimMs` (null: the worker in this process, whose
   * claims never lapse). Given by the caller, not remembered from the claim: after a restart, or
   * on a replica that did not hand out the job, nothing here remembers it, and a renewal that
   * guessed "never" left a vanished worker's job running, holding its board, for good.
   */
  async heartbeat(workerId: string, claimMs: number | null, jobId: string): Promise<{ stop: string | null }> {
    const status = await this.deps.store.renewJobClaim(jobId, workerId, { nowMs: this.now(), claimMs });
    // A stop asked through another replica (no signal of it reaches this one): a debug stream held here ends now, with why.
    if (status.kind !== 'lost' && status.cancelReason !== null) this.debug.jobStopping(jobId, status.cancelReason);
    return { stop: status.kind === 'lost' ? lostJobReason(jobId, status.state) : status.cancelReason };
  }

  /**
   * Keeps a report of the job's UART from `report.offset` on; false when the worker does not hold
   * the job (nothing is kept). `claimMs` as for `heartbeat`. A report starting past the bytes
   * received so far (an earlier one lost on the way, or the unsaved second before a restart) leaves
   * a gap: its size is counted as dropped, so no byte is taken for another, and a late report of
   * the missing range is not placed after newer bytes; the outcome carries the whole capture.
   */
  async uart(workerId: string, claimMs: number | null, jobId: string, report: UartReport): Promise<boolean> {
    const entry = await this.entryOf(workerId, claimMs, jobId);
    if (!entry) return false;
    entry.capture = { timeBase: report.timeBase, clockSource: report.clockSource, droppedUartBytes: report.droppedUartBytes };
    for (const { offset, chunk } of holdReport(entry, report, this.deps.limits.maxUartBytesPerJob)) {
      this.deps.live.publishUart(jobId, { offset, atNanos: chunk.atNanos, bytes: chunk.bytes, timeBase: report.timeBase });
    }
    if (entry.saveTimer === undefined) {
      entry.saveTimer = this.deps.clock.setTimeout(() => {
        entry.saveTimer = undefined;
        this.save(entry);
      }, UART_SAVE_INTERVAL_MS);
    }
    return true;
  }

  /** Records the outcome; returns the job as stored (unchanged when the worker does not hold it). */
  async finish(workerId: string, jobId: string, outcome: WorkerJobOutcome): Promise<JobRecord> {
    this.finishing.add(jobId);
    try {
      return await this.record(workerId, jobId, outcome);
    } finally {
      this.finishing.delete(jobId);
    }
  }

  private async record(workerId: string, jobId: string, outcome: WorkerJobOutcome): Promise<JobRecord> {
    const entry = this.inFlight.get(jobId);
    if (entry) {
      if (entry.saveTimer !== undefined) this.deps.clock.clearTimeout(entry.saveTimer);
      entry.saveTimer = undefined;
      await entry.saving;
      this.inFlight.delete(jobId);
      this.serialInput.forget(jobId);
    }
    const limits = uartBoundsOf(this.deps.limits);
    const nowMs = this.now();
    // A failure that carries no capture records what this gateway holds; holding none, the store keeps what it saved.
    const record: JobOutcome =
      outcome.state === 'done'
        ? { state: 'done', nowMs, uart: uartRecordOf(outcome.uart, limits), stop: outcome.stop, flashMs: outcome.flashMs, runMs: outcome.runMs }
        : { state: 'failed', nowMs, failure: outcome.failure, uart: outcome.uart ? uartRecordOf(outcome.uart, limits) : entry && entry.chunks.length > 0 ? recordOf(entry, this.deps.limits) : null };
    // The session known from the claim saves the store reading it (decision 0860).
    // Its instance's health is counted in the same transaction (decision 0930): an outcome sent again
    // (its answer, or its COMMIT's, lost) finds the end and the count done together, and counts nothing.
    const health = this.deps.instanceHealth;
    const asked = entry && this.quietBoards.asking(entry.job.board);
    const ending = await this.deps.store.finishJob(jobId, record, { workerId, ...(entry && { sessionId: entry.job.sessionId }), ...(health && { health: health.count }) });
    const finished = ending.job;
    if (finished.workerId === workerId) {
      // A debug job handed out through another replica is one too (decision 0663): its row goes now.
      await this.debug.forgetEnded(finished).catch((err: unknown) => this.deps.logger.error(`forgetting debug job ${jobId}`, err));
      this.debug.jobEnded(jobId, `job ${jobId} is ${finished.state}`);
    }
    // The store deleted the job's unread serial input as it recorded the end (decision 0650);
    // a fetch of input still waiting hears the job is over.
    this.signals.notify(`input:${jobId}`);
    if (finished.workerId === workerId) {
      health?.counted(ending);
      this.deps.live.publishState(jobId, finished.state, finished);
      // The board is free for its next job (a worker of another board id waiting on it claims now).
      this.wakeClaims(finished.board);
      if (asked !== undefined && ending.boardQueued !== undefined) this.quietBoards.answered(finished.board, asked, ending.boardQueued, this.now());
    }
    return finished;
  }

  watch(jobId: string, listener: (push: JobPush) => void): () => void {
    const entry = this.inFlight.get(jobId);
    if (!entry) return () => undefined;
    entry.watchers.add(listener);
    return () => {
      entry.watchers.delete(listener);
    };
  }

  /** Serial input for a job `workerId` holds: a long poll (`GatewaySerialInput.fetch`). */
  input(workerId: string, jobId: string, writtenThroughSeq: number, signal: AbortSignal): Promise<SerialInputBatch> {
    return this.serialInput.fetch(workerId, jobId, writtenThroughSeq, signal);
  }

  /** Serial input was queued for `jobId`, or it was asked to stop: its worker's waiting fetch takes it now. */
  inputQueued(jobId: string): void {
    this.serialInput.queued(jobId);
  }

  /** Whether the job's worker wrote input `seq` within `waitMs` (host ms, injected clock). */
  inputWritten(jobId: string, seq: number, waitMs: number, signal: AbortSignal): Promise<boolean> {
    return this.serialInput.written(jobId, seq, waitMs, signal);
  }

  private started(job: JobRecord, workerId: string, claimMs: number | null): void {
    this.inFlight.set(job.jobId, {
      job,
      workerId,
      claimMs,
      chunks: [],
      bytes: 0,
      reportedBytes: 0,
      droppedHere: 0,
      capture: { timeBase: 'wall', droppedUartBytes: 0 },
      saveTimer: undefined,
      saving: Promise.resolve(),
      watchers: new Set(),
    });
    this.deps.live.publishState(job.jobId, 'flashing');
  }

  /** The job as this gateway knows it; another replica's job is taken up from the store. */
  private async entryOf(workerId: string, claimMs: number | null, jobId: string): Promise<JobInFlight | undefined> {
    const known = this.inFlight.get(jobId);
    if (known) return known.workerId === workerId ? known : undefined;
    const job = await this.deps.store.getJob(jobId);
    if (!job || job.workerId !== workerId || (job.state !== 'flashing' && job.state !== 'running')) return undefined;
    this.started(job, workerId, claimMs);
    const entry = this.inFlight.get(jobId)!;
    if (job.uart) {
      entry.chunks = chunksOfRecord(job.uart);
      entry.bytes = job.uart.bytes.length;
      entry.reportedBytes = entry.bytes;
    }
    return entry;
  }

  private save(entry: JobInFlight): void {
    const uart = recordOf(entry, this.deps.limits);
    const { jobId } = entry.job;
    entry.saving = entry.saving
      .then(async () => {
        await this.deps.store.renewJobClaim(jobId, entry.workerId, { nowMs: this.now(), claimMs: entry.claimMs, uart });
      })
      .catch((err: unknown) => this.deps.logger.error(`saving the UART of running job ${jobId} failed`, err));
  }
}
