import type { Clock } from '../../../core/clock.js';
import { RspProtocolError, RspReader } from '../../../core/gdb/rsp-reader.js';
import type { DebugTerms } from '../../../harness/worker/worker-link.js';
import type { BenchStore, JobRecord } from '../../storage/bench/bench-store.js';
import { BenchError } from './bench-errors.js';

/** With no debugger attached this long (host ms), a debug job ends and frees its board; `idle_timeout_seconds` may ask for less or more, up to the most. */
export const DEFAULT_DEBUG_IDLE_MS = 300_000;
export const MAX_DEBUG_IDLE_MS = 3_600_000;
/** The most a debug job's wall deadline stretches for the time under a debugger, host ms (decision 0560). */
export const MAX_DEBUG_MS = 3_600_000;
/** The most bytes waiting in one direction of a stream for the side that reads them (a peer's send buffer included). */
export const MAX_PENDING_DEBUG_BYTES = 1024 * 1024;
/** While a debugger is attached, its session is renewed this often at most (host ms): the session stays alive under a debugger. */
export const SESSION_RENEW_MS = 10_000;

/** The debugger's end of a stream (its WebSocket): the target's bytes, and why it closed. */
export interface DebuggerPeer {
  data(bytes: Buffer): void;
  /** The stream closed: tell the debugger why and close. `protocol`: it sent what is not RSP. */
  closed(reason: string, options: { protocol: boolean }): void;
  /** Bytes written to it and not yet taken by the debugger's client. */
  readonly bufferedBytes: number;
}

/** The worker's end of a debug job's channel (its WebSocket, or the in-process worker's handlers). */
export interface WorkerPeer {
  open(stream: number): void;
  data(stream: number, bytes: Buffer): void;
  close(stream: number, reason: string): void;
  /** The job is no longer a debug job here: the channel closes for good. */
  ended(reason: string): void;
  /** Replaced by a newer connection of the same worker: closes without telling it the job ended. */
  replaced(): void;
  readonly bufferedBytes: number;
}

/** A debugger's stream, as the route that carries it sees it. */
export interface OpenedStream {
  stream: number;
  board: string;
  /** The debugger's connection is up: what waited for it is written to it now. */
  attach(peer: DebuggerPeer): void;
  /** The debugger's bytes, checked as RSP; broken framing or an oversized packet closes this stream only. */
  send(bytes: Buffer): void;
  /** The debugger went away (its connection closed): the board waits for another. */
  close(reason: string): void;
  /** The debugger's client was heard from; answers the session to renew when one is due. */
  heard(): string | null;
}

/** The worker's channel of a debug job, as the route (or the in-process link) that carries it sees it. */
export interface ConnectedWorker {
  data(stream: number, bytes: Buffer): void;
  close(stream: number, reason: string): void;
  /** The worker's connection closed: the stream it carried closes too. */
  disconnected(): void;
}

interface Stream {
  n: number;
  peer: DebuggerPeer | undefined;
  /** The target's bytes that came before the debugger's connection was up. */
  early: Buffer[];
  closed: { reason: string; protocol: boolean } | undefined;
  reader: RspReader;
}

type ToWorker = { kind: 'open'; stream: number } | { kind: 'data'; stream: number; bytes: Buffer } | { kind: 'close'; stream: number; reason: string };

/** A debug job this server handed to a worker. */
interface DebugJob {
  jobId: string;
  agentId: string;
  workerId: string;
  board: string;
  sessionId: string | null;
  stream: Stream | undefined;
  opened: number;
  worker: WorkerPeer | undefined;
  /** What waits for the worker's channel while it is not connected. */
  backlog: ToWorker[];
  backlogBytes: number;
  ended: string | undefined;
  sessionTouchedMs: number;
}

/** Where a debug job's streams are served, as seen from this replica (decision 0663). */
export type DebugJobPlace =
  /** Here, or nowhere (not a debug job, or not the caller's): the relay itself answers or refuses. */
  | { kind: 'here' }
  /** The replica at `replicaUrl` handed the job out and holds its streams: forward the WebSocket there. */
  | { kind: 'elsewhere'; replicaUrl: string }
  /** Another replica holds its streams and cannot be reached from here: refuse with `why`. */
  | { kind: 'unreachable'; why: string };

/**
 * GDB streams between agents and the workers of their debug jobs (issue 32, decisions 0560,
 * 0625 and 0663): a session is armed for debugging (in the store, so any replica's claim sees
 * it), its next job is handed to its worker with debug terms, the worker connects one channel for
 * the job (it dials; it never accepts), and the agent opens one stream at a time on that job; the
 * relay of the replica that handed the job out splices their bytes, and names itself in the store
 * (`replicaUrl`) so other replicas forward both WebSockets to it (`place`). What a debugger sends
 * is checked as RSP here (a packet over 64 KiB or broken framing closes that stream only), and
 * bytes waiting either way are bounded.
 */
export class DebugRelay {
  private readonly jobs = new Map<string, DebugJob>();

  /** `replicaUrl`: the address other replicas reach this one at (`--replica-url`); null when it has none. */
  constructor(private readonly deps: { clock: Clock; store: BenchStore; replicaUrl: () => string | null }) {}

  /** The address other replicas reach this one at; null when it has none. */
  get replicaUrl(): string | null {
    return this.deps.replicaUrl();
  }

  /** The session's next job runs under a debugger (the caller checked the session is the agent's and active). */
  async arm(agentId: string, sessionId: string, options: { idleTimeoutMs?: number }): Promise<DebugTerms> {
    const terms = { idleTimeoutMs: Math.min(options.idleTimeoutMs ?? DEFAULT_DEBUG_IDLE_MS, MAX_DEBUG_IDLE_MS), maxDebugMs: MAX_DEBUG_MS };
    if (!(await this.deps.store.debugArmings.arm(sessionId, agentId, terms, this.deps.clock.nowMs()))) {
      throw new BenchError('session_not_active', `cannot arm a debugger on session ${sessionId}: it ended meanwhile`);
    }
    return terms;
  }

  /** A job was handed to `workerId` here: its debug terms when its session was armed (the arming is used up), else undefined. */
  async claimed(job: JobRecord, workerId: string): Promise<DebugTerms | undefined> {
    if (job.sessionId === null) return undefined;
    const terms = await this.deps.store.debugArmings.claim({ jobId: job.jobId, sessionId: job.sessionId, agentId: job.agentId }, workerId, this.deps.replicaUrl(), this.deps.clock.nowMs());
    if (!terms) return undefined;
    this.jobs.set(job.jobId, {
      jobId: job.jobId,
      agentId: job.agentId,
      workerId,
      board: job.board,
      sessionId: job.sessionId,
      stream: undefined,
      opened: 0,
      worker: undefined,
      backlog: [],
      backlogBytes: 0,
      ended: undefined,
      sessionTouchedMs: this.deps.clock.nowMs(),
    });
    return terms;
  }

  /**
   * Where the streams of `jobId` are served for its agent (`who.agentId`) or its worker
   * (`who.workerId`). `forwarded`: the request came from another replica already, so it is not
   * sent on again (two replicas that each think the other holds a job would pass it back and forth).
   */
  async place(jobId: string, who: { agentId: string } | { workerId: string }, options: { forwarded: boolean }): Promise<DebugJobPlace> {
    if (this.jobs.has(jobId)) return { kind: 'here' };
    const job = await this.deps.store.debugArmings.job(jobId);
    if (!job || ('agentId' in who ? job.agentId !== who.agentId : job.workerId !== who.workerId)) return { kind: 'here' };
    const self = this.deps.replicaUrl();
    if (job.replicaUrl === null) {
      return { kind: 'unreachable', why: `job ${jobId}'s debug streams are served by the replica that handed it to its worker, and that replica has no --replica-url for the others to forward to (docs/deployment.md, "Debugging behind replicas")` };
    }
    if (job.replicaUrl === self) return { kind: 'here' };
    if (options.forwarded) return { kind: 'unreachable', why: `job ${jobId}'s debug streams are served by the replica at ${job.replicaUrl}, and this request was forwarded here already` };
    return { kind: 'elsewhere', replicaUrl: job.replicaUrl };
  }

  /** The job ended through this replica: whether it was a debug job (of any replica), which is then forgotten in the store. */
  async forgetEnded(job: JobRecord): Promise<boolean> {
    const here = this.has(job.jobId);
    const stored = job.sessionId !== null && (await this.deps.store.debugArmings.forgetJob(job.jobId));
    return here || stored;
  }

  /** True while `jobId` is a running debug job handed out here (until its end is told). */
  has(jobId: string): boolean {
    const job = this.jobs.get(jobId);
    return job !== undefined && job.ended === undefined;
  }

  /** The job ended (its outcome came, or it was swept): its stream and its worker's channel close, and it is forgotten. */
  jobEnded(jobId: string, why: string): void {
    const job = this.jobs.get(jobId);
    if (!job || job.ended !== undefined) return;
    job.ended = why;
    if (job.stream) this.closeStream(job, job.stream, why, { tellWorker: false });
    job.worker?.ended(why);
    job.worker = undefined;
    this.jobs.delete(jobId);
  }

  /** The server is closing: every stream and channel closes. */
  shutdown(): void {
    for (const job of [...this.jobs.values()]) this.jobEnded(job.jobId, 'the bench server is shutting down');
  }

  /** Opens agent `agentId`'s debug stream on `jobId`; refused when the job is not its running debug job, or a debugger is attached. */
  async open(agentId: string, jobId: string): Promise<OpenedStream> {
    const job = await this.jobOf(agentId, jobId);
    if (job.stream && !job.stream.closed) throw new BenchError('debugger_attached', `job ${jobId} on board ${job.board} already has a debugger attached (one at a time)`);
    job.opened += 1;
    // What the worker has not yet taken of the stream this one replaces is dropped: its bytes go nowhere now.
    if (job.stream) this.dropBacklog(job, job.stream.n);
    const stream: Stream = { n: job.opened, peer: undefined, early: [], closed: undefined, reader: new RspReader() };
    job.stream = stream;
    this.toWorker(job, { kind: 'open', stream: stream.n });
    return {
      stream: stream.n,
      board: job.board,
      attach: (peer) => {
        stream.peer = peer;
        for (const bytes of stream.early.splice(0)) peer.data(bytes);
        if (stream.closed) peer.closed(stream.closed.reason, { protocol: stream.closed.protocol });
      },
      send: (bytes) => this.fromDebugger(job, stream, bytes),
      close: (reason) => this.closeStream(job, stream, reason),
      heard: () => {
        if (job.sessionId === null || this.deps.clock.nowMs() - job.sessionTouchedMs < SESSION_RENEW_MS) return null;
        job.sessionTouchedMs = this.deps.clock.nowMs();
        return job.sessionId;
      },
    };
  }

  /** True when `jobId` is worker `workerId`'s running debug job handed out here. */
  holds(workerId: string, jobId: string): boolean {
    const job = this.jobs.get(jobId);
    return job !== undefined && job.workerId === workerId && job.ended === undefined;
  }

  /** Worker `workerId` connected its channel for `jobId`; undefined when that is not its running debug job here. A newer connection replaces an older one. */
  connectWorker(workerId: string, jobId: string, peer: WorkerPeer): ConnectedWorker | undefined {
    const job = this.jobs.get(jobId);
    if (!job || job.workerId !== workerId || job.ended !== undefined) return undefined;
    if (job.worker) {
      // The old connection's worker lost its streams with it: the debugger's stream closes too.
      job.worker.replaced();
      if (job.stream) this.closeStream(job, job.stream, "the worker's connection to the server was replaced", { tellWorker: false });
    }
    job.worker = peer;
    for (const message of job.backlog.splice(0)) this.deliver(peer, message);
    job.backlogBytes = 0;
    return {
      data: (stream, bytes) => {
        if (job.worker === peer) this.fromTarget(job, stream, bytes);
      },
      close: (stream, reason) => {
        if (job.worker === peer && job.stream?.n === stream) this.closeStream(job, job.stream, reason, { tellWorker: false });
      },
      disconnected: () => {
        if (job.worker !== peer) return;
        job.worker = undefined;
        if (job.stream) this.closeStream(job, job.stream, "the worker's connection to the server dropped; the board waits for another debugger", { tellWorker: false });
      },
    };
  }

  /** The agent's debug job `jobId` known here; a refusal that says why not. */
  private async jobOf(agentId: string, jobId: string): Promise<DebugJob> {
    const known = this.jobs.get(jobId);
    if (known && known.agentId === agentId && !known.ended) return known;
    const job = await this.deps.store.getJob(jobId);
    if (!job || job.agentId !== agentId) throw new BenchError('job_not_found', `job ${jobId} not found`);
    if (job.state === 'done' || job.state === 'failed') {
      const how = job.failure ? `failed (${job.failure.kind}: ${job.failure.message})` : 'done';
      throw new BenchError('job_not_debuggable', `job ${jobId} has ${how}: a debugger attaches only while its debug job runs`);
    }
    if (job.state === 'queued') throw new BenchError('job_not_debuggable', `job ${jobId} is queued: a debugger attaches once it is running (GET /api/v1/jobs/${jobId}?wait=...)`);
    throw new BenchError(
      'job_not_debuggable',
      `job ${jobId} was not submitted for debugging: arm its session first (POST /api/v1/sessions/{session_id}/debug), then submit the job in it (or the replica that handed it out has restarted since, and its debugger with it)`,
    );
  }

  private fromDebugger(job: DebugJob, stream: Stream, bytes: Buffer): void {
    if (stream.closed) return;
    try {
      stream.reader.feed(bytes.toString('latin1'));
    } catch (err) {
      if (!(err instanceof RspProtocolError)) throw err;
      this.closeStream(job, stream, `the debugger sent what is not GDB's remote protocol (${err.message}); this stream is closed, the board waits for another`, { protocol: true });
      return;
    }
    if (job.backlogBytes + bytes.length > MAX_PENDING_DEBUG_BYTES || (job.worker?.bufferedBytes ?? 0) > MAX_PENDING_DEBUG_BYTES) {
      this.closeStream(job, stream, `more than ${MAX_PENDING_DEBUG_BYTES} bytes wait for the board: this stream is closed`);
      return;
    }
    this.toWorker(job, { kind: 'data', stream: stream.n, bytes });
  }

  private fromTarget(job: DebugJob, n: number, bytes: Buffer): void {
    const stream = job.stream;
    if (!stream || stream.n !== n || stream.closed) return;
    if (!stream.peer) {
      stream.early.push(bytes);
      if (stream.early.reduce((sum, b) => sum + b.length, 0) > MAX_PENDING_DEBUG_BYTES) this.closeStream(job, stream, `more than ${MAX_PENDING_DEBUG_BYTES} bytes wait for the debugger's client: this stream is closed`);
      return;
    }
    if (stream.peer.bufferedBytes > MAX_PENDING_DEBUG_BYTES) {
      this.closeStream(job, stream, `more than ${MAX_PENDING_DEBUG_BYTES} bytes wait for the debugger's client: this stream is closed`);
      return;
    }
    stream.peer.data(bytes);
  }

  /** To the worker's channel, or its backlog while it is not connected (at most one data message per run of sends). */
  private toWorker(job: DebugJob, message: ToWorker): void {
    if (job.worker) {
      this.deliver(job.worker, message);
      return;
    }
    const last = job.backlog.at(-1);
    if (message.kind === 'data' && last?.kind === 'data' && last.stream === message.stream) job.backlog[job.backlog.length - 1] = { ...last, bytes: Buffer.concat([last.bytes, message.bytes]) };
    else job.backlog.push(message);
    if (message.kind === 'data') job.backlogBytes += message.bytes.length;
  }

  private deliver(peer: WorkerPeer, message: ToWorker): void {
    if (message.kind === 'open') peer.open(message.stream);
    else if (message.kind === 'data') peer.data(message.stream, message.bytes);
    else peer.close(message.stream, message.reason);
  }

  /** Drops what waits for the worker of stream `n` (all of it when the worker never saw it open, else all but its close). */
  private dropBacklog(job: DebugJob, n: number): void {
    const unseen = job.backlog.some((m) => m.stream === n && m.kind === 'open');
    job.backlog = job.backlog.filter((m) => m.stream !== n || (!unseen && m.kind === 'close'));
    job.backlogBytes = job.backlog.reduce((bytes, m) => bytes + (m.kind === 'data' ? m.bytes.length : 0), 0);
  }

  private closeStream(job: DebugJob, stream: Stream, reason: string, options: { tellWorker?: boolean; protocol?: boolean } = {}): void {
    if (stream.closed) return;
    stream.closed = { reason, protocol: options.protocol === true };
    stream.early = [];
    if (options.tellWorker !== false && !job.ended) this.toWorker(job, { kind: 'close', stream: stream.n, reason });
    stream.peer?.closed(reason, { protocol: stream.closed.protocol });
  }
}

