import type { Duplex } from 'node:stream';
import type { DebugLegAddress } from '../../clients/bench/debug-leg.js';
import type { BackendErrorKind, BoardHealth, HealthCheckOutcome, RunStop, UartChunk } from '../../backends/backend.js';
import type { UartSoFar } from '../dispatcher.js';

/**
 * How a bench worker talks to the bench service: one protocol for the worker in the server's own
 * process (the embedded default) and for a worker on a single-board computer next to the
 * hardware, which dials out to the server over HTTP. The worker claims jobs for its boards,
 * fetches their firmware by sha256, reports the running phase and UART as it is captured,
 * renews its claim, and reports the outcome; the server keeps every record (the store is the
 * queue), so nothing here is the source of truth.
 */
export interface WorkerLink {
  /**
   * The next task for one of `boards`: an administrator's health check of the board (first), or
   * its oldest queued job; waits (a long poll) until one comes or `signal` aborts (then
   * undefined). Each task is handed to one worker once.
   */
  claim(boards: readonly string[], signal: AbortSignal): Promise<WorkerTask | undefined>;
  /** The firmware bytes of a claimed job (the worker checks them against `ticket.firmwareSha256`). */
  firmware(ticket: JobTicket): Promise<Uint8Array>;
  /** Reset was released: the job is running. */
  running(jobId: string): Promise<JobControl>;
  /** New UART the job printed, from byte `offset` of its capture (a re-sent range is ignored). */
  uart(jobId: string, report: UartReport): Promise<void>;
  /** Renews the worker's claim while the job runs; says whether the job was asked to stop. */
  heartbeat(jobId: string): Promise<JobControl>;
  /** The job's outcome, with everything it printed. */
  finish(jobId: string, outcome: WorkerJobOutcome): Promise<void>;
  /**
   * Serial input agents sent to a running job, in the order the server accepted it: the inputs
   * numbered after `writtenThroughSeq`, which also tells the server that every input up to it was
   * written (decision 0420). A long poll: waits until some arrive, or answers none when its wait
   * runs out or `signal` aborts. `lost` when the job is no longer this worker's.
   */
  input(jobId: string, writtenThroughSeq: number, signal: AbortSignal): Promise<SerialInputBatch>;
  /** The outcome of a health check this worker ran (decision 0421); `refused` when the board cannot be checked here. */
  healthCheckDone(checkId: string, outcome: HealthCheckReport): Promise<void>;
  /**
   * Optional push channel: a link that can tell the worker at once (the worker in the server's
   * process) that a job must stop; the worker still hears a stop on its next heartbeat without it.
   */
  watch?(jobId: string, listener: (push: JobPush) => void): () => void;
  /**
   * A debug job's leg for its next debugger (issue 32, decision 0910): the worker dials, the server
   * holds the leg until a debugger comes. Resolves with the debugger's stream (raw RSP bytes both
   * ways: an upgraded socket for a remote worker, one end of a duplex pair in the server's process),
   * or undefined when the server asks for a new leg (none came within its hold) or `signal`
   * aborted. Rejects with `DebugLegRefused` (clients/bench/debug-leg.ts) when the job is not this worker's debug job there
   * (stop dialling), with anything else when the server could not be reached (dial again). Absent
   * on a link that cannot carry debug streams.
   */
  debugDial?(jobId: string, signal: AbortSignal): Promise<Duplex | undefined>;
  /**
   * Optional: where `debugDial` dials, as plain data, so that a device whose engine runs in a
   * thread of its own (the sim backend) dials the legs itself (decision 0910). Absent on the
   * in-process link, whose legs are no connections.
   */
  debugLegAddress?(jobId: string): DebugLegAddress;
}

/**
 * The terms of a debug job (issue 32, decision 0560): flashed with the core halted at reset and
 * served to a debugger that reaches it through the server; its `uartSeconds` of device time run
 * after the debugger detaches.
 */
export interface DebugTerms {
  /** With no debugger attached this long (host ms), the job ends and frees the board. */
  idleTimeoutMs: number;
  /** The most host ms the job's wall deadline stretches for the time under a debugger. */
  maxDebugMs: number;
}

/** What a claim hands a worker: a job to run, or a health check of one of its boards. */
export type WorkerTask = JobTicket | HealthCheckTicket;

/** A claimed job, as a worker needs it. */
export interface JobTicket {
  kind: 'job';
  jobId: string;
  board: string;
  /** The instance of the board (pool) the job runs on (decision 0510); absent: the board itself. */
  instance?: string;
  firmwareSha256: string;
  /** UART capture after reset release, in seconds of the device's time base. */
  uartSeconds: number;
  maxUartBytes: number;
  /** Present for a debug job: run under a debugger reached through the server, not captured straight away. */
  debug?: DebugTerms;
}

/** An administrator's health check of a board, claimed by the worker that serves it. */
export interface HealthCheckTicket {
  kind: 'health-check';
  checkId: string;
  board: string;
  /** The instance of the board (a pool of physical boards) to check (decision 0606); absent: the board itself. */
  instance?: string;
  /** Host ms the backend's check may run before it is aborted (and fails). */
  timeoutMs: number;
}

/** A health check's outcome as a worker reports it: `refused` when the board has no check here (the administrator's 409). */
export type HealthCheckReport = HealthCheckOutcome | { passed: false; refused: true; reason: string; uartText: '' };

/**
 * Board health of a worker's boards kept by the server (decision 0421): the worker's backends
 * read and write it through the link, so every replica sees it and it outlives the worker.
 */
export interface BoardHealthLink {
  getBoardHealth(boardId: string): Promise<BoardHealth>;
  putBoardHealth(boardId: string, health: BoardHealth): Promise<void>;
}

/** `stop`: why the job must stop now (cancelled, or the claim is no longer the worker's); null to go on. */
export interface JobControl {
  stop: string | null;
}

export type JobPush = { kind: 'stop'; reason: string };

/** Serial input for a running job, as `WorkerLink.input` answers it. */
export interface SerialInputBatch {
  /** In order; `seq` is 1-based and gap-free per job. */
  inputs: Array<{ seq: number; bytes: Uint8Array }>;
  /** The job is no longer this worker's (finished, cancelled, failed by a sweep): stop asking. */
  lost: boolean;
  /** The job was asked to stop (its agent cancelled it): why; the worker stops it now. */
  stop?: string;
}

export interface UartReport extends Pick<UartSoFar, 'timeBase' | 'clockSource' | 'droppedUartBytes'> {
  /** Byte offset of the first chunk's first byte in the job's capture. */
  offset: number;
  chunks: readonly UartChunk[];
}

/** The full capture of a job as its outcome carries it (chunks kept within `maxUartBytes`). */
export type UartCaptureReport = Pick<UartSoFar, 'timeBase' | 'clockSource' | 'uart' | 'droppedUartBytes'>;

export type WorkerJobOutcome =
  | { state: 'done'; uart: UartCaptureReport; stop: RunStop; flashMs: number; runMs: number }
  /** `uart`: what the job printed before it failed or was stopped, kept with the reason; null when nothing. */
  | { state: 'failed'; failure: { kind: BackendErrorKind; message: string }; uart: UartCaptureReport | null };
