import type { BackendErrorKind } from '../../../backends/backend.js';
import type { BoardHealthRecord, BoardHealthStore } from './board-health-store.js';
import type { HealthCheckRecord, HealthCheckStore } from './health-check-store.js';
import type { SerialInputStore } from './serial-input-store.js';
import type { SessionQueueStore } from './session-queue-store.js';
import type { WaitlistStore } from './waitlist-store.js';
import type { DebugArmingStore } from './debug-arming-store.js';
import type { WorkerRegistry } from './worker-registry.js';

/**
 * The bench service's storage, behind one interface. The SQLite implementation
 * (`SqliteBenchStore`) serves a single instance; a PostgreSQL one for several instances comes
 * later. All SQL lives in the implementation; the service talks only to this interface.
 *
 * Every method that both checks and changes state (opening a lease, submitting a job) is one
 * atomic operation here, so two agents racing for one board cannot both win, whatever the
 * implementation. Times are host milliseconds since the epoch from the injected clock: the
 * store never reads a clock itself.
 */
export interface BenchStore {
  /** Cheap liveness probe for `GET /api/v1/health`; throws when the database is unusable. */
  ping(): Promise<void>;

  insertAgent(agent: AgentRecord): Promise<void>;
  getAgent(agentId: string): Promise<AgentRecord | undefined>;
  findAgentByTokenSha256(tokenSha256: string): Promise<AgentRecord | undefined>;

  /**
   * The expiry sweep: the one read-side-free place where sessions expire (besides the writes
   * below that check a lease, which sweep first inside their own transaction). The service runs
   * it from timers on its injected clock; it is safe to run repeatedly and concurrently (a session
   * expires once, whoever sweeps). Reads never write: they show a session due at their `nowMs`
   * as expired (and its lease as freed) exactly as the sweep will record it.
   *
   * Marks every active session whose `expiresAtMs <= nowMs` expired, except one with a job
   * queued, flashing or running: a session's unfinished job keeps it alive, and when the job
   * finishes (`finishJob`, or failed as `interrupted` by `failLapsedClaims`/`releaseWorkerJobs`) the session's
   * idle time starts again from then (decision 0211). Ending or expiring a session
   * (here, in `endSession`, or in any method that expires due sessions first) fails its queued
   * jobs as `cancelled` and frees its lease, unless one of its jobs is flashing or running: then
   * the lease passes to that job and is freed when it finishes.
   */
  expireSessions(nowMs: number): Promise<SessionRecord[]>;
  /**
   * Opens `session` and its lease on the first of `options.instances` (the pool's instances the
   * service would hand out, in its order; default: `session.instance`, else the board itself) that
   * nobody leases, checked and taken in one transaction. With every candidate leased: `board-leased`
   * with the lease that frees first (decision 0510).
   */
  openSession(session: SessionRecord, options?: { instances?: readonly string[] }): Promise<OpenSessionResult>;
  /**
   * The session as of `nowMs`. Here and in every other read of sessions and leases, a session
   * with an unfinished job shows `expiresAtMs` no earlier than `nowMs + idleSeconds`.
   */
  getSession(sessionId: string, nowMs: number): Promise<SessionRecord | undefined>;
  /** Extends an active session to `nowMs + idleSeconds`; otherwise reports the state it is in. */
  heartbeatSession(sessionId: string, nowMs: number): Promise<SessionChangeResult>;
  endSession(sessionId: string, nowMs: number): Promise<SessionChangeResult>;
  listActiveSessions(nowMs: number): Promise<SessionWithAgent[]>;

  /**
   * Inserts a queued job after checking its lease and the board's queue, atomically. A job in a
   * session runs on the session's instance (`job.instance`, when set, must be that one:
   * `session-other-board` otherwise); a session-less job leases the first free one of
   * `options.instances` (default: `job.instance`, else the board itself) for its own duration.
   * A board under an administrator's health check, requested or running, takes no job
   * (`board-health-check`, with when it was requested): checked in the same transaction, on
   * PostgreSQL in the pool lock's statement (decision 0860).
   */
  createJob(job: JobRecord, options: { maxQueuedPerBoard: number; nowMs: number; instances?: readonly string[] }): Promise<CreateJobResult>;
  getJob(jobId: string): Promise<JobRecord | undefined>;
  /**
   * Job execution: a worker (in this process, or a remote one next to the hardware) claims the
   * next job for the boards it serves, tells when reset is released, renews its claim while the
   * job runs (saving the UART so far), and finishes it. The store is the queue: two workers or
   * two replicas never start one job, and jobs on a board start one at a time, oldest first.
   *
   * Claims the oldest queued job on one of `boards` (instance ids: a pool of one's instance is its
   * board id, decision 0510) whose instance has no job flashing or running,
   * moving it to `flashing` for `workerId`. `claimMs`: the claim lapses unless renewed within it
   * (`failLapsedClaims`); null for a worker in the server's own process, whose claims hold until
   * `releaseWorkerJobs` (it dies with the process, and the next start releases them).
   */
  claimJob(request: { workerId: string; boards: readonly string[]; nowMs: number; claimMs: number | null }): Promise<JobRecord | undefined>;
  /**
   * A worker's next task: the job `claimJob` claims on `boards`, else the oldest health check
   * requested of the worker on one of `checkBoards` (boards and instance ids), moved to `running`
   * (`healthChecks.claim`). No job starts on an instance under a check (the claim skips it), so a
   * job is asked for first; on PostgreSQL both in one statement when no check is waiting (decision 0860).
   */
  claimTask(request: { workerId: string; boards: readonly string[]; checkBoards: readonly string[]; nowMs: number; claimMs: number | null }): Promise<ClaimedTask | undefined>;
  /** Moves a job the worker holds from `flashing` to `running` (reset released). */
  markJobRunning(jobId: string, workerId: string, nowMs: number): Promise<JobClaimStatus>;
  /**
   * Renews the worker's claim on a flashing or running job to `nowMs + claimMs`, saving `uart`
   * (everything captured so far) when given, so a job cut short keeps it. Tells the worker whether
   * the job was asked to stop (`cancelReason`).
   */
  renewJobClaim(jobId: string, workerId: string, renewal: { nowMs: number; claimMs: number | null; uart?: UartRecord }): Promise<JobClaimStatus>;
  /**
   * Asks a job to stop: a queued one fails as `cancelled` at once; a flashing or running one keeps
   * running until its worker hears `cancelReason` (on its next renewal) and finishes it. A finished
   * job is left as it is. Returns the job as it is after the call.
   */
  requestJobCancel(jobId: string, reason: string, nowMs: number): Promise<JobRecord | undefined>;
  /**
   * The sweep for vanished workers: fails as `interrupted` every flashing or running job whose
   * claim lapsed by `nowMs`, keeping the UART saved while it ran, freeing its lease and renewing
   * its session from `nowMs`. Safe to run on every replica at once (a job fails once).
   */
  failLapsedClaims(nowMs: number): Promise<JobRecord[]>;
  /**
   * Moves every lapsing claim on a flashing or running job to at least `untilMs` (never earlier):
   * at a server's start, its remote workers could not renew nor report while it was down. Returns
   * how many claims moved. Safe on every replica at once.
   */
  extendClaims(untilMs: number): Promise<number>;
  /**
   * Fails as `unavailable`, with `reason`, every job still queued that was created at or before
   * `createdAtOrBeforeMs` (waited too long for a worker), freeing its own lease and renewing its
   * session from `nowMs`. Safe on every replica at once.
   */
  failOverdueQueuedJobs(createdAtOrBeforeMs: number, failure: { reason: string; nowMs: number }): Promise<JobRecord[]>;
  /**
   * Fails as `interrupted`, with `reason`, the flashing or running jobs claimed by `workerId`
   * except those in `keep` (a worker starting again: what it no longer runs will never finish).
   */
  releaseWorkerJobs(workerId: string, release: { reason: string; nowMs: number; keep?: readonly string[] }): Promise<JobRecord[]>;
  /**
   * Finishes a job (`done` or `failed`) and frees the lease the job holds (its own, or its closed
   * session's); an active session of the job is renewed from `outcome.nowMs`. A job already
   * finished keeps its first outcome. With `workerId`, only the worker holding the job's claim may
   * finish it (returns the job unchanged otherwise: a worker that lost its claim cannot overwrite).
   * `ended` says whether this call recorded the outcome: a worker's outcome sent again (its answer
   * lost on the way) finds the job ended by its own first one, which must not count twice.
   * `sessionId`: the job's session as the caller read it (it never changes), which saves the store
   * reading it (decision 0860); a wrong one costs that read and changes nothing else. `health`: what
   * the end does to its instance's health, applied in the same transaction (decision 0930), so the
   * count commits with the end or not at all, and an outcome sent again finds both done.
   */
  finishJob(jobId: string, outcome: JobOutcome, options?: FinishJobOptions): Promise<FinishedJob>;

  listLeases(nowMs: number): Promise<LeaseWithAgent[]>;
  /** Per board: jobs waiting and jobs flashing or running. */
  boardActivity(): Promise<Map<string, { queued: number; active: number }>>;
  /** Per instance (decision 0510): jobs waiting and jobs flashing or running. */
  instanceActivity(): Promise<Map<string, { queued: number; active: number }>>;
  /** Totals; with `nowMs`, a session due by then is not counted open (as `listActiveSessions`). */
  counts(nowMs?: number): Promise<StoreCounts>;
  recentJobs(limit: number): Promise<JobWithAgent[]>;
  recentFailures(limit: number): Promise<JobWithAgent[]>;

  /** Board health (failures, quarantine) per board, in the same database. */
  readonly boardHealth: BoardHealthStore;
  /** Health checks of boards on workers: requested, claimed by the worker, finished (decision 0421). */
  readonly healthChecks: HealthCheckStore;
  /** Serial input queued for the worker running a job (decision 0420). */
  readonly serialInput: SerialInputStore;
  /** The pages' waitlist, in the same database. */
  readonly waitlist: WaitlistStore;
  /** Bench workers (credentials, boards, last heard from), in the same database. */
  readonly workers: WorkerRegistry;
  /** The session queue (`wait_seconds`) of every replica, in the same database (decision 0555). */
  readonly sessionQueue: SessionQueueStore;
  /** Sessions armed for debugging and the debug jobs they became, for every replica (decision 0663). */
  readonly debugArmings: DebugArmingStore;

  /** The secret stored under `name`, created (once, for ever) with `create` when absent. */
  secret(name: string, create: () => Uint8Array): Promise<Uint8Array>;

  close(): Promise<void>;
}

/** Where a worker's claim on a job stands (`markJobRunning`, `renewJobClaim`). */
export type JobClaimStatus =
  /**
   * Still the worker's; `cancelReason` set when the job was asked to stop (session closed, ...).
   * `inputSent` (from `markJobRunning` only): whether any serial input was ever queued for the job.
   */
  | { kind: 'held'; cancelReason: string | null; inputSent?: boolean }
  /** Not the worker's any more: finished (cancelled, failed by a sweep) or never claimed by it. */
  | { kind: 'lost'; state: JobState };

export interface AgentRecord {
  agentId: string;
  label: string;
  /** Lower-case hex SHA-256 of the bearer token; the token itself is never stored. */
  tokenSha256: string;
  createdAtMs: number;
}

export const sessionStates = ['active', 'ended', 'expired'] as const;
export type SessionState = (typeof sessionStates)[number];

export interface SessionRecord {
  sessionId: string;
  agentId: string;
  board: string;
  state: SessionState;
  idleSeconds: number;
  createdAtMs: number;
  expiresAtMs: number;
  /** When the session was ended, or when it expired (= its `expiresAtMs`). */
  endedAtMs: number | null;
  lastHeartbeatAtMs: number | null;
  /**
   * The instance of the pool `board` the session holds (decision 0510); absent when it is the
   * board itself (a pool of one). On input: the one instance asked for explicitly.
   */
  instance?: string;
}

export interface SessionWithAgent extends SessionRecord {
  agentLabel: string;
}

/** Who holds a board: an open session, or a job that took a lease for its own duration. */
export type LeaseHolder = { kind: 'session'; sessionId: string } | { kind: 'job'; jobId: string };

export interface LeaseWithAgent {
  /** The pool (board id). */
  board: string;
  /** The instance leased; absent when it is the board itself (a pool of one). */
  instance?: string;
  holder: LeaseHolder;
  agentId: string;
  agentLabel: string;
  /** When the lease frees itself unless renewed; null for a job's lease (held until it finishes). */
  expiresAtMs: number | null;
}

export type OpenSessionResult = { kind: 'opened'; session: SessionRecord } | { kind: 'board-leased'; lease: LeaseWithAgent };

export type SessionChangeResult =
  | { kind: 'changed'; session: SessionRecord }
  | { kind: 'not-active'; session: SessionRecord }
  | { kind: 'not-found' };

// The one list of job states (wire/job-states.ts), re-exported for the store's users.
export { jobStates, type JobState } from '../../../wire/job-states.js';
import type { JobState } from '../../../wire/job-states.js';

/** Failure kinds of a job: the backend's stable kinds, plus `interrupted` (server restarted under it). */
export type JobFailureKind = BackendErrorKind | 'interrupted';

export interface ElfSummary {
  machine: number;
  machineName: string;
  entry: number;
  segments: Array<{ paddr: number; vaddr: number; fileSizeBytes: number; memSizeBytes: number }>;
}

export interface UartRecord {
  /** Everything kept, in order (at most the per-job UART limit). */
  bytes: Uint8Array;
  droppedBytes: number;
  timeBase: 'simulated' | 'wall';
  /** How the device's time advanced, when its backend states it (QEMU icount); absent otherwise. */
  clockSource?: string;
  /** Chunk boundaries with device-time stamps; bounded, see `chunksOmitted`. */
  chunks: Array<{ atNanos: number; offset: number; length: number }>;
  chunksOmitted: number;
}

export type StopRecord =
  | { reason: 'elapsed' | 'until'; elapsedNanos: number }
  | { reason: 'exited'; exitCode: number; elapsedNanos: number }
  | { reason: 'crashed'; message: string; elapsedNanos: number };

export interface JobRecord {
  jobId: string;
  agentId: string;
  board: string;
  /** The session the job runs under, or null when it took a lease of its own. */
  sessionId: string | null;
  state: JobState;
  firmware: { sha256: string; sizeBytes: number; elf: ElfSummary };
  uartSeconds: number;
  uart: UartRecord | null;
  stop: StopRecord | null;
  failure: { kind: JobFailureKind; message: string } | null;
  createdAtMs: number;
  startedAtMs: number | null;
  runningAtMs: number | null;
  finishedAtMs: number | null;
  flashMs: number | null;
  runMs: number | null;
  /** The worker holding the job while it is flashing or running (kept after it finishes); null before. */
  workerId: string | null;
  /** Why the job was asked to stop while flashing or running; null when it was not. */
  cancelReason: string | null;
  /**
   * The instance of the pool `board` the job runs on (its session's, or the one it leased);
   * absent when it is the board itself (a pool of one). On input: the one asked for explicitly.
   */
  instance?: string;
}

export interface JobWithAgent extends JobRecord {
  agentLabel: string;
}

export type CreateJobResult =
  | { kind: 'created'; job: JobRecord }
  | { kind: 'board-leased'; lease: LeaseWithAgent }
  | { kind: 'board-health-check'; requestedAtMs: number }
  | { kind: 'session-not-found' }
  | { kind: 'session-not-active'; session: SessionRecord }
  | { kind: 'session-other-board'; session: SessionRecord }
  | { kind: 'queue-full'; queued: number };

export type JobOutcome =
  | {
      state: 'done';
      nowMs: number;
      uart: UartRecord;
      stop: StopRecord;
      flashMs: number;
      runMs: number;
    }
  /** `uart`: what the job captured before it failed or was stopped, kept with the reason. */
  | { state: 'failed'; nowMs: number; failure: { kind: JobFailureKind; message: string }; uart?: UartRecord | null };

/** What `claimTask` hands a worker: a job or a health check. */
export type ClaimedTask = { job: JobRecord; check?: undefined } | { check: HealthCheckRecord; job?: undefined };

/** What `finishJob` answers: the job as stored, and whether this call ended it. */
export interface FinishedJob {
  job: JobRecord;
  ended: boolean;
  /** The instance's health before and after this end was counted (decision 0930); absent when the end says nothing of an instance, or this call did not end the job. */
  health?: { instance: string; before: BoardHealthRecord; after: BoardHealthRecord };
  /** When this call ended the job: whether another job was queued, or a health check requested, on its board or one of its instances as the end was written (decision 0980). */
  boardQueued?: boolean;
}

/** `finishJob`'s options: the claim's holder, the job's session as the caller read it, and the health rule. */
export interface FinishJobOptions {
  workerId?: string;
  sessionId?: string | null;
  health?: HealthCount;
}

/**
 * What a job's end does to the health of the instance it ran on (decision 0930): decided by the
 * service (server/bench/domain/instance-health.ts), applied by the store in the transaction that
 * ends the job. Undefined: the end says nothing of an instance (a pool of one, a cancelled job).
 */
export type HealthCount = (ended: JobRecord) => HealthChange | undefined;

export interface HealthChange {
  /** The instance whose health record changes. */
  instance: string;
  /**
   * The new record from the one as it is now, or undefined to leave it. Pure: the transaction may
   * run again after a race the database detected (as `BoardHealthStore.update`'s `change`).
   */
  change: (now: BoardHealthRecord) => BoardHealthRecord | undefined;
  /** False: a job that ran under a debugger (decision 0560) leaves the record as it is; the store looks only then. */
  countsUnderDebugger: boolean;
}

export interface StoreCounts {
  agents: number;
  sessionsOpen: number;
  jobsTotal: number;
  jobsByState: Record<JobState, number>;
}

/** The instance a record holds: its `instance`, or its board for a pool of one (decision 0510). */
export function instanceOf(record: { board: string; instance?: string }): string {
  return record.instance ?? record.board;
}

/** The `instance` field of a record holding `instance` of pool `board`: absent when they are one. */
export function instanceField(board: string, instance: string | null | undefined): { instance?: string } {
  return instance === null || instance === undefined || instance === board ? {} : { instance };
}
