import { type Clock, type TimerHandle } from '../../../core/clock.js';
import { isFinishedJobState } from '../../../wire/job-states.js';
import type { BenchStore, JobRecord } from '../../storage/bench/bench-store.js';
import { sessionJobEndedId } from '../../storage/bench/session-queue-store.js';
import type { JobLive, LiveUartChunk } from './job-live.js';

/** Host ms between two looks at the store while watching (a job reported through another replica). */
export const WATCH_POLL_MS = 1_000;

export interface WatchDeps {
  clock: Clock;
  store: BenchStore;
  live: JobLive;
  /** What a job running in this process has printed so far (ahead of the store's copy). */
  localUart?: (jobId: string) => readonly LiveUartChunk[] | undefined;
  /**
   * Whether the job's outcome is reported through this process (its worker's gateway here holds
   * it): its end then arrives as a live event with the record, and the store's signal is not
   * looked into. Absent: every signal is.
   */
  endsHere?: (jobId: string) => boolean;
  pollMs?: number;
}

/**
 * Resolves with the job once it is done or failed, or as it is when `waitMs` (injected clock) runs
 * out or `signal` aborts. `known`: the job as the caller just read it (saves reading it again).
 * Woken by this process's job events, which carry the finished record (no read then); by the
 * store's signal that the job's instance freed (a session-less job's lease is deleted as it ends;
 * on PostgreSQL a NOTIFY every replica hears, decision 0650) or that the job, in a session whose
 * lease it keeps, ended (decision 0801), for a job whose worker reports through another replica;
 * and, for what neither says (the LISTEN connection is down), by a look at the store every `pollMs`. A look that fails
 * (the database blinked) is tried again at the next poll; the last read's failure rejects. Neither
 * may go unhandled: Node ends the process on an unhandled rejection, every request with it.
 */
export async function waitForJobEnd(deps: WatchDeps, jobId: string, waitMs: number, signal: AbortSignal, known?: JobRecord): Promise<JobRecord | undefined> {
  const first = known ?? (await deps.store.getJob(jobId));
  if (!first || isFinishedJobState(first.state) || waitMs <= 0) return first;
  const instance = first.instance ?? first.board;
  const endedId = sessionJobEndedId(jobId);
  return new Promise<JobRecord | undefined>((resolve, reject) => {
    let settled = false;
    let looking = false;
    const timers: TimerHandle[] = [];
    const end = (): boolean => {
      if (settled) return false;
      settled = true;
      unsubscribe();
      stopSignals();
      for (const t of timers) deps.clock.clearTimeout(t);
      signal.removeEventListener('abort', finish);
      return true;
    };
    /** Ends with the job as the store has it now (timeout, abort). */
    const finish = () => {
      if (end()) deps.store.getJob(jobId).then(resolve, reject);
    };
    /** Ends with a finished record already read. */
    const finishWith = (job: JobRecord) => {
      if (end()) resolve(job);
    };
    /** Looks at the store once (one look at a time); `onFail` after a failed read. */
    const look = (onFail: () => void, onUnfinished: () => void) => {
      if (looking || settled) return;
      looking = true;
      deps.store.getJob(jobId).then(
        (job) => {
          looking = false;
          if (job && isFinishedJobState(job.state)) finishWith(job);
          else if (!settled) onUnfinished();
        },
        () => {
          looking = false;
          if (!settled) onFail();
        },
      );
    };
    const unsubscribe = deps.live.subscribe(jobId, (event) => {
      if (event.kind === 'state' && isFinishedJobState(event.state)) {
        if (event.job) finishWith(event.job);
        else finish();
      }
    });
    const stopSignals = deps.store.sessionQueue.onChange((freed) => {
      // The instance's lease freed, or this job in a session ended (or, without an id, anything may
      // have): the job may have ended elsewhere.
      if ((freed !== undefined && freed !== instance && freed !== endedId) || deps.endsHere?.(jobId)) return;
      look(noop, noop);
    });
    signal.addEventListener('abort', finish, { once: true });
    timers.push(deps.clock.setTimeout(finish, waitMs));
    const poll = () => {
      timers.push(
        deps.clock.setTimeout(() => {
          if (looking) poll();
          else look(poll, poll);
        }, deps.pollMs ?? WATCH_POLL_MS),
      );
    };
    poll();
  });
}

const noop = () => undefined;

/** One piece of a job's UART as a stream carries it. */
export interface StreamChunk extends LiveUartChunk {
  timeBase: 'simulated' | 'wall';
}

/**
 * Streams a job's UART from byte `fromOffset`: what the store has first (a late client gets every
 * byte from the first), then chunks as this process hears of them, de-duplicated by byte offset;
 * the store is looked at every `pollMs` for bytes reported through another replica. `onEnd` gets
 * the finished job once every byte it kept was sent. Returns the stop (client gone).
 */
export function streamJobUart(
  deps: WatchDeps,
  jobId: string,
  options: { fromOffset: number; onChunk: (chunk: StreamChunk) => void; onEnd: (job: JobRecord) => void; onIdle?: () => void; idleMs?: number },
): () => void {
  let sentUpTo = Math.max(0, options.fromOffset);
  let timeBase: 'simulated' | 'wall' = 'wall';
  let stopped = false;
  let started = false;
  const early: LiveUartChunk[] = [];
  let pollTimer: TimerHandle | undefined;
  let idleTimer: TimerHandle | undefined;

  const send = (chunk: LiveUartChunk) => {
    const end = chunk.offset + chunk.bytes.length;
    if (stopped || end <= sentUpTo) return;
    const bytes = chunk.offset >= sentUpTo ? chunk.bytes : chunk.bytes.slice(sentUpTo - chunk.offset);
    timeBase = chunk.timeBase ?? timeBase;
    options.onChunk({ offset: Math.max(chunk.offset, sentUpTo), atNanos: chunk.atNanos, bytes, timeBase });
    sentUpTo = end;
    armIdle();
  };
  /** Everything the store holds beyond what was sent; the end when the job is finished. */
  const fromStore = (job: JobRecord | undefined) => {
    if (stopped || !job) return;
    if (job.uart) {
      timeBase = job.uart.timeBase;
      for (const c of job.uart.chunks) send({ offset: c.offset, atNanos: c.atNanos, bytes: job.uart.bytes.slice(c.offset, c.offset + c.length), timeBase });
      // Bytes past the last kept chunk boundary (chunks omitted beyond the limit) go as one piece.
      const last = job.uart.chunks.at(-1);
      const covered = last ? last.offset + last.length : 0;
      if (job.uart.bytes.length > covered) send({ offset: covered, atNanos: last?.atNanos ?? 0, bytes: job.uart.bytes.slice(covered), timeBase });
    }
    if (isFinishedJobState(job.state)) {
      stop();
      options.onEnd(job);
    }
  };
  const look = () => void deps.store.getJob(jobId).then(fromStore, () => undefined);
  const armIdle = () => {
    if (!options.onIdle || stopped) return;
    if (idleTimer !== undefined) deps.clock.clearTimeout(idleTimer);
    idleTimer = deps.clock.setTimeout(() => {
      options.onIdle?.();
      armIdle();
    }, options.idleMs ?? 15_000);
  };
  const poll = () => {
    pollTimer = deps.clock.setTimeout(() => {
      look();
      if (!stopped) poll();
    }, deps.pollMs ?? WATCH_POLL_MS);
  };
  // Listening before reading the store: nothing printed in between is missed (offsets de-duplicate).
  const unsubscribe = deps.live.subscribe(jobId, (event) => {
    if (event.kind === 'uart') {
      if (started) send(event.chunk);
      else early.push(event.chunk);
    } else if (isFinishedJobState(event.state)) {
      look();
    }
  });
  const stop = () => {
    stopped = true;
    unsubscribe();
    if (pollTimer !== undefined) deps.clock.clearTimeout(pollTimer);
    if (idleTimer !== undefined) deps.clock.clearTimeout(idleTimer);
  };
  // The store's copy first; a read that fails (the database blinked) is tried again a poll later,
  // live chunks kept meanwhile (sent before the stored ones, they would hide them), never unhandled.
  const begin = () =>
    deps.store.getJob(jobId).then(
      (job) => {
        fromStore(job);
        // What this process holds beyond the store's copy (saved up to a second later).
        for (const chunk of deps.localUart?.(jobId) ?? []) send(chunk);
        started = true;
        for (const chunk of early.splice(0)) send(chunk);
        if (!stopped) {
          poll();
          armIdle();
        }
      },
      () => {
        if (!stopped) pollTimer = deps.clock.setTimeout(() => void begin(), deps.pollMs ?? WATCH_POLL_MS);
      },
    );
  void begin();
  return stop;
}
