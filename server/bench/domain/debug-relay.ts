import type { Duplex } from 'node:stream';
import type { Clock, TimerHandle } from '../../../core/clock.js';
import type { DebugTerms } from '../../../harness/worker/worker-link.js';
import { DEBUG_LEG_HOLD_MS } from '../../../wire/worker/debug-schemas.js';
import type { BenchStore, JobRecord } from '../../storage/bench/bench-store.js';
import { BenchError } from './bench-errors.js';

/** With no debugger attached this long (host ms), a debug job ends and frees its board; `idle_timeout_seconds` may ask for less or more, up to the most. */
export const DEFAULT_DEBUG_IDLE_MS = 300_000;
export const MAX_DEBUG_IDLE_MS = 3_600_000;
/** The most a debug job's wall deadline stretches for the time under a debugger, host ms (decision 0560). */
export const MAX_DEBUG_MS = 3_600_000;
/** While a debugger is attached, its session is renewed this often at most (host ms): the session stays alive under a debugger. */
export const SESSION_RENEW_MS = 10_000;

/** The most host ms a debugger waits for its worker's leg; then it is refused. */
export const DEBUGGER_WAIT_MS = 10_000;

/**
 * A worker's leg held by the relay until a debugger comes (the route holds its upgrade request
 * unanswered; the in-process link holds a promise).
 */
export interface WorkerLeg {
  /** A debugger came: the leg becomes its stream (the route answers 101); the worker's stream, as the debugger's side splices it. */
  take(): Duplex;
  /** The leg is not needed: `again` (replaced by a newer leg, or held `DEBUG_LEG_HOLD_MS`) or `ended` (the job is no longer a debug job here: stop dialling). */
  release(answer: { kind: 'again' | 'ended'; reason: string }): void;
}

/** A debugger's place on a job, as the route that carries its stream sees it. */
export interface OpenedDebugger {
  board: string;
  /** The worker's stream once a leg is paired with it; rejects with the refusal when none comes within `DEBUGGER_WAIT_MS` or the job ends first. */
  readonly worker: Promise<Duplex>;
  /** The debugger is still attached: answers the session to renew when a renewal is due (at most every `SESSION_RENEW_MS`), else null. */
  renewDue(): string | null;
  /** Tells the splice to end (the job ended, the server shuts down), with why; set by the route once spliced, and called at once when the end came before. */
  onEnd(listener: (reason: string) => void): void;
  /** The debugger's stream ended (or its connection went before it was paired): the board takes another. Safe to call twice. */
  close(): void;
}

interface Held {
  leg: WorkerLeg;
  timer: TimerHandle;
}

interface Waiting {
  pair: (stream: Duplex) => void;
  refuse: (err: BenchError) => void;
  timer: TimerHandle;
}

/** A debug job this server handed to a worker. */
interface DebugJob {
  jobId: string;
  agentId: string;
  workerId: string;
  board: string;
  sessionId: string | null;
  /** The worker's leg held for the next debugger. */
  held: Held | undefined;
  /** The debugger that has the job's one place: waiting for a leg, or spliced (then `waiting` is undefined). */
  debugger: { waiting: Waiting | undefined; end: (reason: string) => void } | undefined;
  ended: string | undefined;
  /** Why the job was asked to stop (its session ended, it was cancelled): no debugger attaches any more, though its worker has not ended it yet. */
  stopping: string | undefined;
  sessionTouchedMs: number;
}

/** Where a debug job's streams are served, as seen from this replica (decision 0663). */
export type DebugJobPlace =
  /** Here, or nowhere (not a debug job, or not the caller's): the relay itself answers or refuses. */
  | { kind: 'here' }
  /** The replica at `replicaUrl` handed the job out and holds its streams: forward the upgrade there. */
  | { kind: 'elsewhere'; replicaUrl: string }
  /** Another replica holds its streams and cannot be reached from here: refuse with `why`. */
  | { kind: 'unreachable'; why: string };

/**
 * GDB streams between agents and the workers of their debug jobs (issue 32, decisions 0560, 0663
 * and 0910): a session is armed for debugging (in the store, so any replica's claim sees it), its
 * next job is handed to its worker with debug terms, the worker dials a leg for the job (it dials;
 * it never accepts) and the relay holds it until a debugger comes; the agent opens one stream at a
 * time on that job, and the relay pairs it with the held leg, which the route splices byte for
 * byte. The relay of the replica that handed the job out does this, and names itself in the store
 * (`replicaUrl`) so other replicas forward both upgrades to it (`place`). The bytes are not read
 * here: GDB's rules (RSP framing, the packet bound) are the worker's bridge's.
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
      held: undefined,
      debugger: undefined,
      ended: undefined,
      stopping: undefined,
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

  /** The job ended (its outcome came, or it was swept): its stream ends, its held leg is told to stop dialling, and it is forgotten. */
  jobEnded(jobId: string, why: string): void {
    const job = this.jobs.get(jobId);
    if (!job || job.ended !== undefined) return;
    job.ended = why;
    this.jobs.delete(jobId);
    this.releaseHeld(job, { kind: 'ended', reason: why });
    const attached = job.debugger;
    job.debugger = undefined;
    if (attached?.waiting) {
      this.deps.clock.clearTimeout(attached.waiting.timer);
      attached.waiting.refuse(new BenchError('job_not_debuggable', `job ${jobId} ended before its worker took the debugger: ${why}`));
    } else attached?.end(why);
  }

  /**
   * The job was asked to stop (its session ended, it was cancelled; `why` says so), before its
   * worker reports its end: its stream ends now, the debugger reading why as an `E.` reply, a
   * debugger waiting for a leg is refused, its held leg is told to stop dialling, and no debugger
   * attaches any more. The job is forgotten when its end comes (`jobEnded`).
   */
  jobStopping(jobId: string, why: string): void {
    const job = this.jobs.get(jobId);
    if (!job || job.ended !== undefined || job.stopping !== undefined) return;
    job.stopping = why;
    this.releaseHeld(job, { kind: 'ended', reason: why });
    const attached = job.debugger;
    job.debugger = undefined;
    if (attached?.waiting) {
      this.deps.clock.clearTimeout(attached.waiting.timer);
      attached.waiting.refuse(stoppingRefusal(jobId, why));
    } else attached?.end(`job ${jobId} is stopping: ${why}`);
  }

  /** The server is closing: every stream ends and every held leg is let go. */
  shutdown(): void {
    for (const job of [...this.jobs.values()]) this.jobEnded(job.jobId, 'the bench server is shutting down');
  }

  /**
   * Takes job `jobId`'s one debugger place for agent `agentId`; refused when the job is not its
   * running debug job, or a debugger has the place. `worker` then resolves with the worker's
   * stream once a leg is paired (at once when one is held).
   */
  async open(agentId: string, jobId: string): Promise<OpenedDebugger> {
    const job = await this.jobOf(agentId, jobId);
    if (job.debugger) throw new BenchError('debugger_attached', `job ${jobId} on board ${job.board} already has a debugger attached (one at a time)`);
    const endListeners: Array<(reason: string) => void> = [];
    // Kept for a listener that comes after the end: the route attaches its own once the stream is
    // spliced, a turn or two after the pairing, and the job may end in between.
    let endedWith: string | undefined;
    let closed = false;
    const place: NonNullable<DebugJob['debugger']> = {
      waiting: undefined,
      end: (reason) => {
        endedWith ??= reason;
        endListeners.forEach((listener) => listener(reason));
      },
    };
    job.debugger = place;
    const worker = new Promise<Duplex>((pair, refuse) => {
      const held = job.held;
      if (held) {
        job.held = undefined;
        this.deps.clock.clearTimeout(held.timer);
        pair(held.leg.take());
        return;
      }
      const timer = this.deps.clock.setTimeout(() => {
        if (job.debugger === place) job.debugger = undefined;
        place.waiting = undefined;
        refuse(new BenchError('board_offline', `the worker of job ${jobId} did not take the debugger within ${DEBUGGER_WAIT_MS / 1000} s (is it still connected to the server?); try again`, { retryAfterSeconds: 1 }));
      }, DEBUGGER_WAIT_MS);
      place.waiting = {
        pair: (stream) => {
          place.waiting = undefined;
          pair(stream);
        },
        refuse,
        timer,
      };
    });
    // Observed by the route; a refusal nobody waits for any more is no unhandled rejection.
    worker.catch(() => undefined);
    return {
      board: job.board,
      worker,
      renewDue: () => {
        if (job.sessionId === null || this.deps.clock.nowMs() - job.sessionTouchedMs < SESSION_RENEW_MS) return null;
        job.sessionTouchedMs = this.deps.clock.nowMs();
        return job.sessionId;
      },
      onEnd: (listener) => (endedWith === undefined ? void endListeners.push(listener) : listener(endedWith)),
      close: () => {
        if (closed) return;
        closed = true;
        if (place.waiting) this.deps.clock.clearTimeout(place.waiting.timer);
        place.waiting = undefined;
        if (job.debugger === place) job.debugger = undefined;
      },
    };
  }

  /** True when `jobId` is worker `workerId`'s running debug job handed out here. */
  holds(workerId: string, jobId: string): boolean {
    const job = this.jobs.get(jobId);
    return job !== undefined && job.workerId === workerId && job.ended === undefined && job.stopping === undefined;
  }

  /**
   * Worker `workerId`'s leg for `jobId`: taken at once by a debugger waiting for one, else held
   * until one comes (at most `DEBUG_LEG_HOLD_MS`, then released `again`); a newer leg replaces a
   * held one (released `again`). Answers the unpark (the leg's connection went first), or undefined
   * when the job is not the worker's running debug job here (the leg is not touched).
   */
  parkWorker(workerId: string, jobId: string, leg: WorkerLeg): (() => void) | undefined {
    const job = this.jobs.get(jobId);
    if (!job || job.workerId !== workerId || job.ended !== undefined || job.stopping !== undefined) return undefined;
    const waiting = job.debugger?.waiting;
    if (waiting) {
      this.deps.clock.clearTimeout(waiting.timer);
      waiting.pair(leg.take());
      return () => undefined;
    }
    this.releaseHeld(job, { kind: 'again', reason: 'replaced by a newer leg of the same worker' });
    const held: Held = { leg, timer: this.deps.clock.setTimeout(() => this.releaseHeld(job, { kind: 'again', reason: `no debugger came within ${DEBUG_LEG_HOLD_MS / 1000} s` }, held), DEBUG_LEG_HOLD_MS) };
    job.held = held;
    return () => {
      if (job.held !== held) return;
      this.deps.clock.clearTimeout(held.timer);
      job.held = undefined;
    };
  }

  /** Lets the held leg go (only `which` when given) with `answer`. */
  private releaseHeld(job: DebugJob, answer: { kind: 'again' | 'ended'; reason: string }, which?: Held): void {
    const held = job.held;
    if (!held || (which && held !== which)) return;
    job.held = undefined;
    this.deps.clock.clearTimeout(held.timer);
    held.leg.release(answer);
  }

  /** The agent's debug job `jobId` known here; a refusal that says why not. */
  private async jobOf(agentId: string, jobId: string): Promise<DebugJob> {
    const known = this.jobs.get(jobId);
    const job = await this.deps.store.getJob(jobId);
    // A job asked to stop (its session ended, it was cancelled) takes no debugger, though its
    // worker has not ended it yet: the store says so even when another replica ended the session.
    const stopping = known?.stopping ?? job?.cancelReason ?? undefined;
    if (known && known.agentId === agentId && !known.ended && stopping === undefined) return known;
    if (!job || job.agentId !== agentId) throw new BenchError('job_not_found', `job ${jobId} not found`);
    if (job.state === 'done' || job.state === 'failed') {
      const how = job.failure ? `failed (${job.failure.kind}: ${job.failure.message})` : 'done';
      throw new BenchError('job_not_debuggable', `job ${jobId} has ${how}: a debugger attaches only while its debug job runs`);
    }
    if (stopping !== undefined && (job.state === 'flashing' || job.state === 'running')) throw stoppingRefusal(jobId, stopping);
    if (job.state === 'queued') throw new BenchError('job_not_debuggable', `job ${jobId} is queued: a debugger attaches once it is running (GET /api/v1/jobs/${jobId}?wait=...)`);
    throw new BenchError(
      'job_not_debuggable',
      `job ${jobId} was not submitted for debugging: arm its session first (POST /api/v1/sessions/{session_id}/debug), then submit the job in it (or the replica that handed it out has restarted since, and its debugger with it)`,
    );
  }
}

/** A debugger's refusal on a job asked to stop: as for a finished job, it attaches only while its debug job runs. */
function stoppingRefusal(jobId: string, why: string): BenchError {
  return new BenchError('job_not_debuggable', `job ${jobId} is stopping (${why}): a debugger attaches only while its debug job runs`);
}
