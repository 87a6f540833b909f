import type { JobRecord, JobState } from '../../storage/bench/bench-store.js';

/** One UART chunk of a job as it arrives: `offset` is the byte offset of its first byte in the job's UART. */
export interface LiveUartChunk {
  offset: number;
  /** Device time of the chunk, in nanoseconds from reset release, in the job's stated time base. */
  atNanos: number;
  bytes: Uint8Array;
  /** The time base of `atNanos`, when the reporter knows it. */
  timeBase?: 'simulated' | 'wall';
}

/** `job`: the record as it ended, on the state event of a finished job (listeners need not read it again). */
export type JobLiveEvent = { kind: 'uart'; chunk: LiveUartChunk } | { kind: 'state'; state: JobState; job?: JobRecord };

export type JobLiveListener = (event: JobLiveEvent) => void;

/**
 * What this process sees of jobs while they run: UART chunks the moment a worker reports them,
 * and state changes (serial input goes through the store: decision 0420). In-process only: a
 * reader served by one replica about a job reported through another learns of it from the store
 * (readers poll it as the fallback), so nothing here is the record; the store is.
 */
export class JobLive {
  private readonly listeners = new Map<string, Set<JobLiveListener>>();
  private readonly everyJob = new Set<(jobId: string, event: JobLiveEvent) => void>();

  /** Listens to one job's events; returns the unsubscribe. */
  subscribe(jobId: string, listener: JobLiveListener): () => void {
    const set = this.listeners.get(jobId) ?? new Set<JobLiveListener>();
    set.add(listener);
    this.listeners.set(jobId, set);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(jobId);
    };
  }

  /** Listens to every job's events (metrics, logs); returns the unsubscribe. */
  subscribeAll(listener: (jobId: string, event: JobLiveEvent) => void): () => void {
    this.everyJob.add(listener);
    return () => this.everyJob.delete(listener);
  }

  publishUart(jobId: string, chunk: LiveUartChunk): void {
    this.emit(jobId, { kind: 'uart', chunk });
  }

  publishState(jobId: string, state: JobState, job?: JobRecord): void {
    this.emit(jobId, job ? { kind: 'state', state, job } : { kind: 'state', state });
  }

  private emit(jobId: string, event: JobLiveEvent): void {
    const listeners: JobLiveListener[] = [...(this.listeners.get(jobId) ?? [])];
    for (const all of this.everyJob) listeners.push((e) => all(jobId, e));
    for (const listener of listeners) {
      // A listener that throws (a closed response) must not stop the others or the job.
      try {
        listener(event);
      } catch {
        /* the listener's own error path handles its client */
      }
    }
  }
}
