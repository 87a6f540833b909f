import type { Clock, TimerHandle } from '../../core/clock.js';
import { RspProtocolError, RspReader } from '../../core/gdb/rsp-reader.js';
import type { DebugEvent, DebugEventBatch, DebugTerms } from '../../harness/worker/worker-link.js';
import type { BenchStore, JobRecord } from '../store/bench-store.js';
import { BenchError } from './bench-errors.js';
import { Wakeups } from './wakeups.js';

/** With no debugger attached this long (host ms), a debug job ends and frees its board; `idle_timeout_seconds` may ask for less or more, up to the most. */
export const DEFAULT_DEBUG_IDLE_MS = 300_000;
export const MAX_DEBUG_IDLE_MS = 3_600_000;
/** The most a debug job's wall deadline stretches for the time under a debugger, host ms (decision 0560). */
export const MAX_DEBUG_MS = 3_600_000;
/** A stream whose client makes no request this long (host ms) has lost its debugger: closed. A client's receive waits at most 20 s. */
export const STREAM_SILENCE_MS = 60_000;
/** The most bytes waiting in one direction of a stream for the side that reads them. */
export const MAX_PENDING_DEBUG_BYTES = 1024 * 1024;

/** One debugger's stream through this server: bytes both ways, waiting for their reader. */
interface DebugStream {
  id: string;
  toDebugger: string[];
  pendingBytes: number;
  closed: string | undefined;
  /** Its client has received that it closed (nothing more to tell it). */
  drained: boolean;
  reader: RspReader;
  silence: TimerHandle | undefined;
  wakeups: Wakeups;
}

/** A debug job this server handed to a worker. */
interface DebugJob {
  jobId: string;
  agentId: string;
  workerId: string;
  board: string;
  sessionId: string | null;
  stream: DebugStream | undefined;
  opened: number;
  toWorker: DebugEvent[];
  toWorkerBytes: number;
  workerWakeups: Wakeups;
  ended: string | undefined;
  /** Once ended: forgets the job when its last stream's bytes and reason were not received in time. */
  forget: TimerHandle | undefined;
  sessionTouchedMs: number;
}

/**
 * GDB streams between agents and the workers of their debug jobs (issue 32, decision 0560): a
 * session is armed for debugging, its next job is handed to its worker with debug terms, and the
 * agent then opens one stream at a time on that job; both ends long-poll this relay over HTTP, the
 * worker outbound as always. What a debugger sends is checked as RSP here (a packet over 64 KiB
 * or broken framing closes that stream only), and bytes wait in bounded queues. In this process's
 * memory: a debug job's agent and worker reach it through the replica that handed the job out.
 */
export class DebugRelay {
  private readonly armed = new Map<string, { agentId: string; terms: DebugTerms }>();
  private readonly jobs = new Map<string, DebugJob>();

  constructor(private readonly deps: { clock: Clock; store: BenchStore }) {}

  /** The session's next job runs under a debugger (the caller checked the session is the agent's and active). */
  arm(agentId: string, sessionId: string, options: { idleTimeoutMs?: number }): DebugTerms {
    const terms = { idleTimeoutMs: Math.min(options.idleTimeoutMs ?? DEFAULT_DEBUG_IDLE_MS, MAX_DEBUG_IDLE_MS), maxDebugMs: MAX_DEBUG_MS };
    this.armed.set(sessionId, { agentId, terms });
    return terms;
  }

  /** A job was handed to `workerId`: its debug terms when its session was armed (the arming is used up), else undefined. */
  claimed(job: JobRecord, workerId: string): DebugTerms | undefined {
    const armed = job.sessionId === null ? undefined : this.armed.get(job.sessionId);
    if (!armed || armed.agentId !== job.agentId) return undefined;
    this.armed.delete(job.sessionId!);
    this.jobs.set(job.jobId, {
      jobId: job.jobId,
      agentId: job.agentId,
      workerId,
      board: job.board,
      sessionId: job.sessionId,
      stream: undefined,
      opened: 0,
      toWorker: [],
      toWorkerBytes: 0,
      workerWakeups: new Wakeups(this.deps.clock),
      ended: undefined,
      forget: undefined,
      sessionTouchedMs: this.deps.clock.nowMs(),
    });
    return armed.terms;
  }

  /** True while `jobId` is a running debug job handed out here (until its end is told). */
  has(jobId: string): boolean {
    const job = this.jobs.get(jobId);
    return job !== undefined && job.ended === undefined;
  }

  /**
   * The job ended (its outcome came, or it was swept): its stream closes and the worker stops
   * asking. The debugger's client may still receive what the target sent last and why the stream
   * closed: the job is kept until that is received, or for `STREAM_SILENCE_MS` at most.
   */
  jobEnded(jobId: string, why: string): void {
    const job = this.jobs.get(jobId);
    if (!job || job.ended !== undefined) return;
    job.ended = why;
    if (job.stream) this.closeStream(job, job.stream, why);
    job.workerWakeups.wakeAll();
    if (!job.stream || (job.stream.toDebugger.length === 0 && job.stream.drained)) this.forget(job);
    else job.forget = this.deps.clock.setTimeout(() => this.forget(job), STREAM_SILENCE_MS);
  }

  /** The server is closing: every stream closes and every waiting long poll is answered. */
  shutdown(): void {
    for (const job of [...this.jobs.values()]) {
      this.jobEnded(job.jobId, 'the bench server is shutting down');
      this.forget(job);
    }
  }

  /** A session ended: an arming nobody used is dropped. */
  sessionEnded(sessionId: string): void {
    this.armed.delete(sessionId);
  }

  /** Opens agent `agentId`'s debug stream on `jobId`; refused when the job is not its running debug job, or a debugger is attached. */
  async open(agentId: string, jobId: string): Promise<{ stream: string; board: string }> {
    const job = await this.jobOf(agentId, jobId);
    if (job.stream && !job.stream.closed) throw new BenchError('debugger_attached', `job ${jobId} on board ${job.board} already has a debugger attached (one at a time)`);
    job.opened += 1;
    // What the worker has not yet taken of the stream this one replaces is dropped: its bytes go
    // nowhere now, and a stream the worker never saw open need not be opened and closed there.
    if (job.stream) this.dropQueued(job, job.stream.id);
    const stream: DebugStream = { id: `${jobId}.${job.opened}`, toDebugger: [], pendingBytes: 0, closed: undefined, drained: false, reader: new RspReader(), silence: undefined, wakeups: new Wakeups(this.deps.clock) };
    job.stream = stream;
    this.heardFrom(job, stream);
    this.toWorker(job, { stream: stream.id, kind: 'open' });
    return { stream: stream.id, board: job.board };
  }

  /** Bytes the debugger sent (latin1 text), checked as RSP; broken framing or an oversized packet closes this stream only. */
  async send(agentId: string, jobId: string, streamId: string, text: string): Promise<void> {
    const job = await this.jobOf(agentId, jobId);
    const stream = this.openStream(job, streamId);
    this.heardFrom(job, stream);
    try {
      stream.reader.feed(text);
    } catch (err) {
      if (!(err instanceof RspProtocolError)) throw err;
      const reason = `the debugger sent what is not GDB's remote protocol (${err.message}); this stream is closed, the board waits for another`;
      this.closeStream(job, stream, reason);
      throw closedError(jobId, streamId, reason);
    }
    if (job.toWorkerBytes + text.length > MAX_PENDING_DEBUG_BYTES) {
      const reason = `more than ${MAX_PENDING_DEBUG_BYTES} bytes wait for the board: this stream is closed`;
      this.closeStream(job, stream, reason);
      throw closedError(jobId, streamId, reason);
    }
    this.toWorker(job, { stream: stream.id, kind: 'data', text });
  }

  /** What the target sent to the stream (a long poll of at most `waitMs`); `closed` once it is closed and drained. */
  async receive(agentId: string, jobId: string, streamId: string, waitMs: number, signal: AbortSignal): Promise<{ text: string; closed: string | null; sessionDue: string | null }> {
    const job = await this.jobOf(agentId, jobId, { ended: true });
    const stream = job.stream?.id === streamId ? job.stream : undefined;
    if (!stream) throw closedError(jobId, streamId, 'no such stream (a newer one replaced it, or it was never opened)');
    this.heardFrom(job, stream);
    if (stream.toDebugger.length === 0 && !stream.closed) await stream.wakeups.wait(waitMs, signal);
    const text = stream.toDebugger.splice(0).join('');
    stream.pendingBytes = 0;
    this.heardFrom(job, stream);
    // The session stays alive while a debugger is attached: the route renews it at most every 10 s.
    const due = job.sessionId !== null && this.deps.clock.nowMs() - job.sessionTouchedMs >= 10_000 ? job.sessionId : null;
    if (due) job.sessionTouchedMs = this.deps.clock.nowMs();
    const closed = stream.closed ?? null;
    if (closed !== null) stream.drained = true;
    // An ended job was kept for this last receive only.
    if (closed !== null && job.ended !== undefined) this.forget(job);
    return { text, closed, sessionDue: due };
  }

  /** The debugger went away: its stream closes (the board waits for another, or its idle timeout). */
  async close(agentId: string, jobId: string, streamId: string): Promise<void> {
    const job = await this.jobOf(agentId, jobId, { ended: true });
    if (job.stream?.id === streamId) this.closeStream(job, job.stream, 'the debugger closed the stream');
  }

  /** What debuggers did for the worker's debug job (a long poll of at most `waitMs`); `ended` when the job is no longer a debug job here. */
  async events(workerId: string, jobId: string, waitMs: number, signal: AbortSignal): Promise<DebugEventBatch> {
    const job = this.jobs.get(jobId);
    if (!job || job.workerId !== workerId) return { events: [], ended: true };
    if (job.toWorker.length === 0 && !job.ended) await job.workerWakeups.wait(waitMs, signal);
    const events = job.toWorker.splice(0);
    job.toWorkerBytes = 0;
    return { events, ended: job.ended !== undefined && events.length === 0 };
  }

  /** The target's bytes for a stream, and/or that the worker closed it; false when the worker does not hold the job. */
  fromTarget(workerId: string, jobId: string, streamId: string, text: string, closed: string | undefined): boolean {
    const job = this.jobs.get(jobId);
    if (!job || job.workerId !== workerId) return false;
    const stream = job.stream?.id === streamId ? job.stream : undefined;
    if (!stream || stream.closed) return true;
    if (text) {
      stream.toDebugger.push(text);
      stream.pendingBytes += text.length;
    }
    if (closed !== undefined) this.closeStream(job, stream, closed, { tellWorker: false });
    else if (stream.pendingBytes > MAX_PENDING_DEBUG_BYTES) this.closeStream(job, stream, `more than ${MAX_PENDING_DEBUG_BYTES} bytes wait for the debugger's client: this stream is closed`);
    stream.wakeups.wakeAll();
    return true;
  }

  /** The agent's debug job `jobId` known here; a refusal that says why not. */
  private async jobOf(agentId: string, jobId: string, options: { ended?: boolean } = {}): Promise<DebugJob> {
    const known = this.jobs.get(jobId);
    if (known && known.agentId === agentId && (options.ended || !known.ended)) return known;
    const job = await this.deps.store.getJob(jobId);
    if (!job || job.agentId !== agentId) throw new BenchError('job_not_found', `job ${jobId} not found`);
    if (job.state === 'done' || job.state === 'failed') {
      const how = job.failure ? `failed (${job.failure.kind}: ${job.failure.message})` : 'done';
      throw new BenchError('job_not_debuggable', `job ${jobId} has ${how}: a debugger attaches only while its debug job runs`);
    }
    if (job.state === 'queued') throw new BenchError('job_not_debuggable', `job ${jobId} is queued: a debugger attaches once it is running (GET /api/v1/jobs/${jobId}?wait=...)`);
    throw new BenchError(
      'job_not_debuggable',
      `job ${jobId} was not submitted for debugging on this server: arm its session first (POST /api/v1/sessions/{session_id}/debug), then submit the job in it`,
    );
  }

  private openStream(job: DebugJob, streamId: string): DebugStream {
    const stream = job.stream?.id === streamId ? job.stream : undefined;
    if (!stream) throw closedError(job.jobId, streamId, 'no such stream (a newer one replaced it, or it was never opened)');
    if (stream.closed) throw closedError(job.jobId, streamId, stream.closed);
    return stream;
  }

  /** The debugger's client was heard from: the stream's silence timer starts again. */
  private heardFrom(job: DebugJob, stream: DebugStream): void {
    if (stream.closed) return;
    if (stream.silence !== undefined) this.deps.clock.clearTimeout(stream.silence);
    stream.silence = this.deps.clock.setTimeout(
      () => this.closeStream(job, stream, `the debugger's client made no request for ${STREAM_SILENCE_MS / 1000} s: it is gone`),
      STREAM_SILENCE_MS,
    );
  }

  /**
   * Queues `event` for the worker. Data following data of the same stream joins it, so the queue
   * holds at most one data event between two opens or closes: its length is bounded by the streams,
   * as its bytes are by `MAX_PENDING_DEBUG_BYTES`.
   */
  private toWorker(job: DebugJob, event: DebugEvent): void {
    const last = job.toWorker.at(-1);
    if (event.kind === 'data' && last?.kind === 'data' && last.stream === event.stream) job.toWorker[job.toWorker.length - 1] = { ...last, text: last.text + event.text };
    else job.toWorker.push(event);
    if (event.kind === 'data') job.toWorkerBytes += event.text.length;
    job.workerWakeups.wakeAll();
  }

  /** Drops what waits for the worker of stream `streamId` (all of it when the worker never saw it open, else all but its close). */
  private dropQueued(job: DebugJob, streamId: string): void {
    const unseen = job.toWorker.some((event) => event.stream === streamId && event.kind === 'open');
    job.toWorker = job.toWorker.filter((event) => event.stream !== streamId || (!unseen && event.kind === 'close'));
    job.toWorkerBytes = job.toWorker.reduce((bytes, event) => bytes + (event.kind === 'data' ? event.text.length : 0), 0);
  }

  private forget(job: DebugJob): void {
    if (job.forget !== undefined) this.deps.clock.clearTimeout(job.forget);
    job.forget = undefined;
    if (this.jobs.get(job.jobId) === job) this.jobs.delete(job.jobId);
  }

  private closeStream(job: DebugJob, stream: DebugStream, reason: string, options: { tellWorker?: boolean } = {}): void {
    if (stream.closed) return;
    stream.closed = reason;
    if (stream.silence !== undefined) this.deps.clock.clearTimeout(stream.silence);
    stream.silence = undefined;
    if (options.tellWorker !== false && !job.ended) this.toWorker(job, { stream: stream.id, kind: 'close', reason });
    stream.wakeups.wakeAll();
  }
}

function closedError(jobId: string, streamId: string, reason: string): BenchError {
  return new BenchError('debug_stream_closed', `debug stream ${streamId} of job ${jobId} is closed: ${reason}`);
}
