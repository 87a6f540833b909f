import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Clock, TimerHandle } from '../../../core/clock.js';
import { StorageFault } from '../../storage/storage-faults.js';
import { type HostToWriter, type VoteAnswer, type WriterThreadData, type WriterToHost, writerMessage } from './vote-writer-protocol.js';

/** The thread's entry: `.js` in the built package, `.ts` under tsx or vitest (beside the vote route: it answers with the route's view). */
export const defaultWriterEntry = new URL(`../routes/post-vote-thread${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

export interface VoteWriterOptions extends WriterThreadData {
  clock: Clock;
  /** Told, before any answer of a batch is handed back, which items the thread's commits changed: the event loop's caches forget them. */
  onChanged: (itemIds: readonly string[]) => void;
  /** How long the thread may stay silent while this relay's votes wait, before it is taken for hung and replaced; default 60 s. */
  answerWithinMs?: number;
  /** The thread's entry module (tests start a faulty one). */
  entry?: URL;
  log: (message: string, cause: unknown) => void;
}

/**
 * The vote writer thread ended (or was ended) before it answered: whether the vote was stored is
 * not known; sending it again is safe (votes are idempotent). A fault that passes by itself (the
 * next vote starts a new thread): answered 503 with `Retry-After`, as a database away is.
 */
export class VoteWriterStopped extends StorageFault {
  override readonly name = 'VoteWriterStopped';
  readonly kind = 'database-unavailable' as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, 1, options);
  }
}

/** Tests only: called right after a vote was sent to the thread, so a test can crash it with the vote waiting. */
export const voteWriterTestHooks: { afterSend?: (writer: VoteWriter) => void } = {};

/** The thread of each entry module, shared by every relay of the process (one load of the relay's code, not one per relay). */
const threads = new Map<string, WriterThread>();
let writersOpened = 0;

/**
 * POST /items/{id}/vote on a thread of its own (decision 0921, after 0770), SQLite only: the route
 * hands over the body's bytes with the item id and the time; the thread parses them, checks the
 * vote, stores it in its group commit, tallies, and answers the status and the answer's JSON text
 * (or a refusal), one message per batch. One thread serves every relay of the process, each relay
 * with its own connection there; it starts at the first vote. A thread that fails, exits, or says
 * nothing for `answerWithinMs` while votes wait is ended: every vote waiting on it is rejected with
 * `VoteWriterStopped` saying why (a 503), the reason is logged, and the next vote starts a new one.
 */
export class VoteWriter {
  readonly writer = ++writersOpened;
  /** The thread this relay's store is open on; another (or none) means `open` first. */
  private openOn: WriterThread | undefined;
  private commitsOfEndedThreads = 0;
  private commitsOnThread = 0;
  private closed = false;
  /** Votes of this relay waiting on the thread, and the watchdog that runs while any do. */
  private waiting = 0;
  private watchdog: TimerHandle | undefined;

  constructor(private readonly options: VoteWriterOptions) {}

  /** Checks and stores a vote from its body's bytes; settles with its answer once committed (not yet synced), or refused. */
  async post(itemId: string, body: Uint8Array, nowMs: number): Promise<VoteAnswer> {
    if (this.closed) throw new VoteWriterStopped('the relay is closing: the vote writer takes no more votes');
    const thread = this.thread();
    const answer = thread.request({ type: 'vote', writer: this.writer, id: 0, itemId, body, nowMs });
    voteWriterTestHooks.afterSend?.(this);
    return this.waitFor(thread, answer);
  }

  /** A batch's answers arrived: the caches forget what it changed first (`WriterThread.receive`). */
  heardFrom(thread: WriterThread, message: Extract<WriterToHost, { type: 'answers' }>): void {
    if (thread === this.openOn) this.commitsOnThread = Math.max(this.commitsOnThread, message.commits);
    if (message.changedItems.length > 0) this.options.onChanged(message.changedItems);
  }

  /** `answer`, watched: while any vote of this relay waits, the thread must say something (to any relay) every `answerWithinMs`. */
  private async waitFor<T>(thread: WriterThread, answer: Promise<T>): Promise<T> {
    this.waiting++;
    this.watch(thread);
    try {
      return await answer;
    } finally {
      this.waiting--;
    }
  }

  private watch(thread: WriterThread): void {
    if (this.watchdog !== undefined) return;
    const { clock } = this.options;
    const withinMs = this.options.answerWithinMs ?? 60_000;
    const heardBefore = thread.heard;
    this.watchdog = clock.setTimeout(() => {
      this.watchdog = undefined;
      if (thread.failure || this.waiting === 0) return;
      if (thread.heard !== heardBefore) return this.watch(thread);
      const what = thread.ready ? 'answered nothing' : 'did not start';
      thread.fail(new VoteWriterStopped(`the vote writer thread ${what} for ${withinMs} ms while ${this.waiting} vote(s) of this relay waited; it was taken for hung and ended`));
    }, withinMs);
  }

  /** Write transactions this relay's writer committed (each synced by the event loop's store), for the ingest bench. */
  get commits(): number {
    return this.commitsOfEndedThreads + this.commitsOnThread;
  }

  /** Whether a thread serves this relay now (tests). */
  get running(): boolean {
    return this.openOn !== undefined && !this.openOn.failure;
  }

  /** Settles once the thread serving this relay said it is ready (tests); rejects if it fails first. */
  whenThreadReady(): Promise<void> {
    return this.openOn ? this.openOn.started : Promise.reject(new Error('no vote writer thread serves this relay yet'));
  }

  /** Ends the thread now as a crash would, before it answers what waits (tests of the failure path). */
  crashForTest(): void {
    this.openOn?.fail(new VoteWriterStopped('the vote writer thread was ended by a test'));
  }

  /** Closes this relay's connection in the thread (before the event loop's store closes: on SQLite the last connection checkpoints). */
  async close(): Promise<void> {
    this.closed = true;
    const thread = this.openOn;
    this.openOn = undefined;
    if (this.watchdog !== undefined) this.options.clock.clearTimeout(this.watchdog);
    this.watchdog = undefined;
    if (!thread || thread.failure) return;
    await this.waitFor(thread, thread.request({ type: 'close', writer: this.writer, id: 0 })).catch((error: unknown) => {
      this.options.log("relay: the vote writer thread could not close this relay's connection", error);
    });
    thread.release(this);
  }

  /** The live thread with this relay's store open on it: started, or replaced after a failure, as needed. */
  private thread(): WriterThread {
    const { database, selfSecretKey, selfSlice, defaultSliceFrom, log } = this.options;
    const entry = this.options.entry ?? defaultWriterEntry;
    let thread = threads.get(entry.href);
    if (!thread || thread.failure) {
      const started: WriterThread = new WriterThread(entry, log, () => {
        if (threads.get(entry.href) === started) threads.delete(entry.href);
      });
      thread = started;
      threads.set(entry.href, thread);
    }
    if (thread !== this.openOn) {
      if (this.openOn) this.commitsOfEndedThreads += this.commitsOnThread;
      this.commitsOnThread = 0;
      thread.open(this, { type: 'open', writer: this.writer, data: { database, selfSecretKey, defaultSliceFrom, ...(selfSlice ? { selfSlice } : {}) } });
      this.openOn = thread;
    }
    return thread;
  }
}

/** tsx's ESM API (a development dependency: only TypeScript entries need it). */
function tsxApiUrl(): string {
  // The `import` condition's file: `require.resolve` would give the CommonJS build.
  const manifest = createRequire(import.meta.url).resolve('tsx/package.json');
  return new URL('dist/esm/api/index.mjs', pathToFileURL(manifest)).href;
}

/** One writer thread: numbered requests and their answers. Never used again once failed. */
class WriterThread {
  failure: VoteWriterStopped | undefined;
  /** Messages received: a watchdog that sees none while votes wait takes the thread for hung. */
  heard = 0;
  ready = false;
  /** Settles when the thread says it is ready, or rejects when it fails first. */
  readonly started: Promise<void>;
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve: (answer: VoteAnswer) => void; reject: (error: Error) => void }>();
  private nextId = 1;
  /** Relays with their store open here, by writer number; the thread ends when the last one closes. */
  private readonly users = new Map<number, VoteWriter>();
  private onStarted: { resolve: () => void; reject: (error: Error) => void } | undefined;

  constructor(
    entry: URL,
    private readonly log: (message: string, cause: unknown) => void,
    private readonly onEnded: () => void,
  ) {
    this.started = new Promise<void>((resolve, reject) => (this.onStarted = { resolve, reject }));
    this.started.catch(() => undefined);
    this.worker = entry.pathname.endsWith('.ts')
      ? // Node 20 applies neither a parent's loader hooks nor `--import` in `execArgv` to a worker's entry: tsx's scoped importer loads it.
        new Worker(`import(${JSON.stringify(tsxApiUrl())}).then((tsx) => tsx.tsImport(${JSON.stringify(entry.href)}, ${JSON.stringify(entry.href)}))`, { eval: true })
      : new Worker(entry);
    // Only votes waiting keep the process alive (`busyChanged`), not an idle thread.
    this.worker.unref();
    this.worker.on('message', (raw: unknown) => this.receive(raw));
    this.worker.on('error', (error) => this.fail(new VoteWriterStopped(`the vote writer thread failed: ${error.message}`, { cause: error })));
    this.worker.on('messageerror', (error) => this.fail(new VoteWriterStopped(`the vote writer thread sent a message that could not be read: ${error.message}`)));
    this.worker.on('exit', (code) => this.fail(new VoteWriterStopped(`the vote writer thread exited (code ${code})`)));
  }

  /** Opens a relay's store here; its votes may follow at once (the thread queues them behind the opening). */
  open(user: VoteWriter, message: Extract<HostToWriter, { type: 'open' }>): void {
    this.users.set(user.writer, user);
    if (!this.failure) this.worker.postMessage(message);
  }

  /** A relay closed its store here; the last one ends the thread. */
  release(user: VoteWriter): void {
    this.users.delete(user.writer);
    if (this.users.size > 0 || this.failure) return;
    this.failure = new VoteWriterStopped('the vote writer thread was ended: no relay uses it');
    this.onEnded();
    void this.worker.terminate();
  }

  /** Sends a vote or a close and settles with the thread's answer; rejects with the reason when the thread fails first. */
  request(message: Extract<HostToWriter, { type: 'vote' | 'close' }>): Promise<VoteAnswer> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.busyChanged();
      this.worker.postMessage({ ...message, id });
    });
  }

  /** Ends the thread; every request waiting on it is rejected with `reason`, which is logged once. */
  fail(reason: VoteWriterStopped): void {
    if (this.failure) return;
    this.failure = reason;
    this.onStarted?.reject(reason);
    this.onEnded();
    this.log(`relay: ${reason.message}; ${this.pending.size} vote(s) waiting on it fail, and the next vote starts a new thread`, reason.cause ?? reason);
    for (const waiting of this.pending.values()) waiting.reject(reason);
    this.pending.clear();
    void this.worker.terminate();
  }

  private receive(raw: unknown): void {
    this.heard++;
    const message = writerMessage(raw);
    if (!message) {
      this.fail(new VoteWriterStopped(`the vote writer thread sent a message the event loop does not understand: ${String(JSON.stringify(raw)).slice(0, 200)}`));
      return;
    }
    if (message.type === 'ready') {
      this.ready = true;
      this.onStarted?.resolve();
      return;
    }
    if (message.type === 'closed') {
      this.settle(message.id, (waiting) => waiting.resolve({ id: message.id, status: 0, text: '' }));
      return;
    }
    // Before any answer of the batch: a client that reads after its answer sees the commit.
    this.users.get(message.writer)?.heardFrom(this, message);
    for (const answer of message.answers) this.settle(answer.id, (waiting) => waiting.resolve(answer));
  }

  private settle(id: number, how: (waiting: { resolve: (answer: VoteAnswer) => void; reject: (error: Error) => void }) => void): void {
    const waiting = this.pending.get(id);
    if (!waiting) return;
    this.pending.delete(id);
    this.busyChanged();
    how(waiting);
  }

  private busyChanged(): void {
    if (this.pending.size === 0) this.worker.unref();
    else this.worker.ref();
  }
}
