import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { type Transferable, Worker } from 'node:worker_threads';
import type { Clock, TimerHandle } from '../../core/clock.js';
import { BackendError } from '../backend.js';
import {
  CONTROL,
  CONTROL_WORDS,
  type HostMessage,
  STOP,
  type ThreadAnswer,
  type ThreadBatch,
  threadMessageSchema,
} from './sim-thread-protocol.js';

/** A request without its id: `SimThread.request` numbers it. */
export type HostRequest = HostMessage extends infer M ? (M extends { id: number } ? Omit<M, 'id'> : never) : never;
/** A message that gets no answer. */
export type HostNotice = Extract<HostMessage, { type: 'write' | 'drive' | 'verdict' }>;

/** Whoever holds a debug session on the thread (its output comes on the session's own channel): told of the thread's failure, which ends the session. */
export interface SimThreadDebugListener {
  onFailure(reason: BackendError): void;
}

/** How the host watches a thread: set by whoever uses it (a thread serves one device after another). */
export interface SimThreadWatch {
  clock: Clock;
  /** Host ms a busy thread may go without a sign of life (a slice, an answer) before it is declared hung. */
  answerWithinMs: number;
}

/**
 * The entry of the real engine thread, beside this file: `.js` in the built package, `.ts` when
 * the sources run under tsx or vitest (the thread is then started with tsx's loader).
 */
export const defaultSimThreadEntry = new URL(`./sim-thread${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

/** tsx's ESM API (a development dependency: only TypeScript entries need it). */
function tsxApiUrl(): string {
  // The `import` condition's file: `require.resolve` would give the CommonJS build.
  const manifest = createRequire(import.meta.url).resolve('tsx/package.json');
  return new URL('dist/esm/api/index.mjs', pathToFileURL(manifest)).href;
}

/**
 * One engine thread (a `worker_threads` Worker) as the host sees it: numbered requests and their
 * answers, UART batches, the shared control words, and a watchdog. The thread is terminated, and
 * every request waiting on it fails with the reason, when it throws outside a request, exits, or
 * shows no sign of life for `answerWithinMs` while it is busy; such a thread is never used again.
 */
export class SimThread {
  /** Who the thread works for, in failure messages ("the simulator thread of pico"); set on open. */
  label = 'a simulator thread';
  /** The clock and bound of the watchdog. */
  watch: SimThreadWatch;
  /** Receives UART batches while a run is in progress. */
  onBatch: ((batch: ThreadBatch) => void) | undefined;
  private readonly worker: Worker;
  private readonly control: Int32Array;
  private readonly pending = new Map<number, { resolve: (answer: ThreadAnswer) => void; reject: (error: BackendError) => void; what: string }>();
  private nextId = 1;
  private failure: BackendError | undefined;
  private terminating = false;
  private watchdog: TimerHandle | undefined;
  private beatAtLastCheck = -1;
  private started: { resolve: () => void; reject: (error: BackendError) => void } | undefined;
  private debugListener: SimThreadDebugListener | undefined;

  private constructor(
    /** The thread's entry module (`defaultSimThreadEntry`, or a test's with faulty engines). */
    readonly entry: URL,
    watch: SimThreadWatch,
    /** The nice value the thread runs at (Linux), if lowered. */
    readonly nice: number | undefined,
  ) {
    this.watch = watch;
    const shared = new SharedArrayBuffer(CONTROL_WORDS * Int32Array.BYTES_PER_ELEMENT);
    this.control = new Int32Array(shared);
    this.worker = entry.pathname.endsWith('.ts')
      ? // TypeScript sources (development, tests) are loaded through tsx's scoped importer: Node 20
        // does not apply a parent's loader hooks, nor `--import` in `execArgv`, to a worker's entry.
        new Worker(`import(${JSON.stringify(tsxApiUrl())}).then((tsx) => tsx.tsImport(${JSON.stringify(entry.href)}, ${JSON.stringify(entry.href)}))`, {
          eval: true,
          workerData: { control: shared, nice },
        })
      : new Worker(entry, { workerData: { control: shared, nice } });
    this.worker.on('message', (raw: unknown) => this.receive(raw));
    this.worker.on('error', (err) => this.fail(new BackendError('internal', `${this.label} failed: ${err.message}`, { cause: err })));
    this.worker.on('messageerror', (err) => this.fail(new BackendError('internal', `${this.label} sent a message that could not be read: ${err.message}`)));
    this.worker.on('exit', (code) => {
      if (!this.terminating) this.fail(new BackendError('internal', `${this.label} exited with code ${code}`));
    });
  }

  /** Starts a thread and waits until it serves (bounded by the watchdog). */
  static async start(entry: URL, watch: SimThreadWatch, options: { nice?: number } = {}): Promise<SimThread> {
    const thread = new SimThread(entry, watch, options.nice);
    const ready = new Promise<void>((resolve, reject) => (thread.started = { resolve, reject }));
    thread.busyChanged();
    try {
      await ready;
    } finally {
      thread.started = undefined;
      thread.busyChanged();
    }
    return thread;
  }

  /** Set once the thread has failed or was terminated: why it can no longer be used. */
  get unusable(): BackendError | undefined {
    return this.failure;
  }

  /** Sends `message` (moving `transfer`, e.g. a debug channel's port) and resolves with the thread's answer; rejects with the reason when the thread fails first. */
  request(message: HostRequest, transfer: readonly Transferable[] = []): Promise<ThreadAnswer> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise<ThreadAnswer>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, what: message.type });
      this.busyChanged();
      this.worker.postMessage({ ...message, id }, transfer);
    });
  }

  /** Sends a message that gets no answer (UART input, a driven pin). */
  notify(message: HostNotice): void {
    if (this.failure) throw this.failure;
    this.worker.postMessage(message);
  }

  /** Tells the current run to go on, stop as `until`, or stop as cancelled; an abort also wakes a thread waiting for a verdict. */
  setStop(stop: (typeof STOP)[keyof typeof STOP]): void {
    Atomics.store(this.control, CONTROL.stop, stop);
    if (stop === STOP.abort) this.giveVerdict();
  }

  /** Lets a thread that asked about `until` go on (having set `setStop` first): the word moves, then the message wakes it. */
  giveVerdict(): void {
    Atomics.add(this.control, CONTROL.verdict, 1);
    if (!this.failure) this.worker.postMessage({ type: 'verdict' } satisfies HostNotice);
  }

  /**
   * Sets who holds a debug session (undefined: nobody). While a debugger is attached the thread is
   * watched, but its silence counts only while its target works (`CONTROL.debugWorking`): a
   * target halted in the debugger is idle, not hung.
   */
  setDebugListener(listener: SimThreadDebugListener | undefined): void {
    this.debugListener = listener;
    this.busyChanged();
  }

  /** Ends the thread and frees what it holds; waiting requests fail with `reason`. */
  terminate(reason = new BackendError('internal', `${this.label} was terminated`)): void {
    this.fail(reason);
  }

  private receive(raw: unknown) {
    const parsed = threadMessageSchema.safeParse(raw);
    if (!parsed.success) {
      this.fail(new BackendError('internal', `${this.label} sent a message the host does not understand: ${parsed.error.message}`));
      return;
    }
    const message = parsed.data;
    if (message.type === 'ready') this.started?.resolve();
    else if (message.type === 'batch') {
      if (this.onBatch) this.onBatch(message);
      // Nobody to judge `until`: stop the run rather than leave the thread waiting for a verdict.
      else if (message.ask) this.setStop(STOP.abort);
    } else {
      const waiting = this.pending.get(message.id);
      if (!waiting) return;
      this.pending.delete(message.id);
      this.busyChanged();
      waiting.resolve(message);
    }
  }

  private fail(reason: BackendError) {
    if (this.failure) return;
    this.failure = reason;
    this.terminating = true;
    this.stopWatchdog();
    this.started?.reject(reason);
    for (const waiting of this.pending.values()) waiting.reject(reason);
    this.pending.clear();
    this.debugListener?.onFailure(reason);
    this.debugListener = undefined;
    void this.worker.terminate();
  }

  private get busy(): boolean {
    return this.started !== undefined || this.pending.size > 0 || this.debugListener !== undefined;
  }

  /** A busy thread keeps the process alive and is watched; an idle one does neither. */
  private busyChanged() {
    if (this.failure) return;
    if (this.busy && this.watchdog === undefined) {
      this.worker.ref();
      this.beatAtLastCheck = -1;
      this.armWatchdog();
    } else if (!this.busy && this.watchdog !== undefined) {
      this.worker.unref();
      this.stopWatchdog();
    } else if (!this.busy) {
      this.worker.unref();
    }
  }

  /**
   * Every `answerWithinMs` while busy: the beat the thread bumps at every slice and every message
   * must have moved since the last look, unless the thread is waiting for the host's verdict on
   * `until`, or only a debugger is attached and its target is halted (it waits for a person, for
   * as long as they like: `CONTROL.debugWorking` is 0). All are read from shared memory, so a host
   * that was itself too busy to read the thread's messages does not mistake a live thread for a
   * hung one.
   */
  private armWatchdog() {
    this.watchdog = this.watch.clock.setTimeout(() => {
      this.watchdog = undefined;
      if (!this.busy || this.failure) return;
      const beat = Atomics.load(this.control, CONTROL.beat);
      const waitingOnHost = Atomics.load(this.control, CONTROL.waiting) === 1;
      // Attached and nothing asked of it but the debugger's: silent is fine unless its target works.
      const onlyDebugging = !this.started && this.pending.size === 0;
      const idle = onlyDebugging && Atomics.load(this.control, CONTROL.debugWorking) === 0;
      if (beat === this.beatAtLastCheck && !waitingOnHost && !idle) {
        const doing = onlyDebugging ? 'debug' : this.started ? 'starting' : [...this.pending.values()].map((p) => p.what).join(', ');
        this.fail(
          new BackendError(
            'timeout',
            `${this.label} showed no sign of life for ${this.watch.answerWithinMs} ms of host time while ${doingWords(doing)}: ` +
              'the engine hung; the thread was terminated',
          ),
        );
        return;
      }
      this.beatAtLastCheck = beat;
      this.armWatchdog();
    }, this.watch.answerWithinMs);
  }

  private stopWatchdog() {
    if (this.watchdog !== undefined) this.watch.clock.clearTimeout(this.watchdog);
    this.watchdog = undefined;
  }
}

function doingWords(doing: string): string {
  if (doing === 'run') return 'running';
  if (doing === 'debug') return 'serving the debugger';
  return doing;
}
