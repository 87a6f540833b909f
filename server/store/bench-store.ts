import type { BackendErrorKind } from '../../backends/backend.js';
import type { BoardHealthStore } from './board-health-store.js';
import type { WaitlistStore } from './waitlist-store.js';

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
   * finishes (`finishJob`, or failed as `interrupted` by `recoverAfterRestart`) the session's
   * idle time starts again from then (decision 0211). Ending or expiring a session
   * (here, in `endSession`, or in any method that expires due sessions first) fails its queued
   * jobs as `cancelled` and frees its lease, unless one of its jobs is flashing or running: then
   * the lease passes to that job and is freed when it finishes.
   */
  expireSessions(nowMs: number): Promise<SessionRecord[]>;
  /** Opens `session` and its lease on `session.board`, unless that board is leased (by anyone). */
  openSession(session: SessionRecord): Promise<OpenSessionResult>;
  /**
   * The session as of `nowMs`. Here and in every other read of sessions and leases, a session
   * with an unfinished job shows `expiresAtMs` no earlier than `nowMs + idleSeconds`.
   */
  getSession(sessionId: string, nowMs: number): Promise<SessionRecord | undefined>;
  /** Extends an active session to `nowMs + idleSeconds`; otherwise reports the state it is in. */
  heartbeatSession(sessionId: string, nowMs: number): Promise<SessionChangeResult>;
  endSession(sessionId: string, nowMs: number): Promise<SessionChangeResult>;
  listActiveSessions(nowMs: number): Promise<SessionWithAgent[]>;

  /** Inserts a queued job after checking its lease and the board's queue, atomically. */
  createJob(job: JobRecord, options: { maxQueuedPerBoard: number; nowMs: number }): Promise<CreateJobResult>;
  getJob(jobId: string): Promise<JobRecord | undefined>;
  /**
   * Moves a job to `flashing` or `running`; a no-op for a job already failed (cancelled meanwhile).
   * One job per board: a job does not start flashing while another job of its board is flashing
   * or running (throws `BoardBusyError`), whichever process dispatches it.
   */
  markJobPhase(jobId: string, phase: 'flashing' | 'running', nowMs: number): Promise<void>;
  /**
   * Saves the UART a flashing or running job has captured so far (a no-op once it finished), so
   * that a job cut short by a crash keeps it: `recoverAfterRestart` leaves it in place.
   */
  saveJobUart(jobId: string, uart: UartRecord): Promise<void>;
  /**
   * Finishes a job (`done` or `failed`) and frees the lease the job holds (its own, or its closed
   * session's); an active session of the job is renewed from `outcome.nowMs`. A job already
   * finished keeps its first outcome.
   */
  finishJob(jobId: string, outcome: JobOutcome): Promise<JobRecord>;
  /**
   * After a restart: jobs left `flashing`/`running` are failed as `interrupted`, keeping the UART
   * saved while they ran (their leases freed, their sessions renewed from `nowMs`); sessions that
   * ran out while the server was down, with no job queued, are expired. Returns the jobs still
   * `queued`, oldest first, for the dispatcher to run again.
   */
  recoverAfterRestart(nowMs: number): Promise<{ requeued: JobRecord[]; interrupted: JobRecord[]; expired: SessionRecord[] }>;

  listLeases(nowMs: number): Promise<LeaseWithAgent[]>;
  /** Per board: jobs waiting and jobs flashing or running. */
  boardActivity(): Promise<Map<string, { queued: number; active: number }>>;
  /** Totals; with `nowMs`, a session due by then is not counted open (as `listActiveSessions`). */
  counts(nowMs?: number): Promise<StoreCounts>;
  recentJobs(limit: number): Promise<JobWithAgent[]>;
  recentFailures(limit: number): Promise<JobWithAgent[]>;

  /** Board health (failures, quarantine) per board, in the same database. */
  readonly boardHealth: BoardHealthStore;
  /** The pages' waitlist, in the same database. */
  readonly waitlist: WaitlistStore;

  /** The secret stored under `name`, created (once, for ever) with `create` when absent. */
  secret(name: string, create: () => Uint8Array): Promise<Uint8Array>;

  close(): Promise<void>;
}

/** A second job of a board asked to start while one is flashing or running there (`markJobPhase`). */
export class BoardBusyError extends Error {
  constructor(
    readonly board: string,
    readonly jobId: string,
    readonly activeJobId: string,
  ) {
    super(`job ${jobId} cannot start on board ${board}: job ${activeJobId} is still flashing or running there (one job per board)`);
    this.name = 'BoardBusyError';
  }
}

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
}

export interface SessionWithAgent extends SessionRecord {
  agentLabel: string;
}

/** Who holds a board: an open session, or a job that took a lease for its own duration. */
export type LeaseHolder = { kind: 'session'; sessionId: string } | { kind: 'job'; jobId: string };

export interface LeaseWithAgent {
  board: string;
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

export const jobStates = ['queued', 'flashing', 'running', 'done', 'failed'] as const;
export type JobState = (typeof jobStates)[number];

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
}

export interface JobWithAgent extends JobRecord {
  agentLabel: string;
}

export type CreateJobResult =
  | { kind: 'created'; job: JobRecord }
  | { kind: 'board-leased'; lease: LeaseWithAgent }
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

export interface StoreCounts {
  agents: number;
  sessionsOpen: number;
  jobsTotal: number;
  jobsByState: Record<JobState, number>;
}
