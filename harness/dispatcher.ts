import type { Board } from '../boards/board-schema.js';
import { type Backend, BackendError, type Device, type FirmwareImage, type JobBudget, type TimeBase, type UartChunk } from '../backends/backend.js';
import { type Clock, sleep } from '../core/clock.js';
import { type FirmwareRun, runFirmware } from './run-firmware.js';

export type JobPhase = 'flashing' | 'running';

export interface DispatchRequest {
  jobId: string;
  board: Board;
  /** The instance of the board the job runs on (decision 0510): jobs of one instance run one at a time. Default: the board. */
  instance?: string;
  backend: Backend;
  image: FirmwareImage;
  /** UART capture after reset release, in seconds of the device's time base. */
  uartSeconds: number;
  maxUartBytes: number;
  /** Told when the job leaves the queue (`flashing`) and when reset is released (`running`). */
  onPhase?: (phase: JobPhase) => void | Promise<void>;
  /**
   * Told after every UART chunk the device delivers, with everything captured so far. A job that
   * is cancelled or stopped by its deadline rejects with only the reason, so this is how its
   * caller keeps what it printed up to the stop (and can save it while the job runs).
   */
  onUart?: (soFar: UartSoFar) => void;
  /** Told when the job's device is open (before flashing): its serial input may be written while the job runs. */
  onOpen?: (device: Device) => void;
}

/**
 * The UART a job has captured so far, kept exactly as its `FirmwareRun` keeps it (chunks within
 * `maxUartBytes`, the rest counted as dropped). A live view that grows while the job runs: copy
 * what must outlive the call.
 */
export interface UartSoFar {
  readonly timeBase: TimeBase;
  readonly clockSource?: string;
  readonly uart: readonly UartChunk[];
  readonly uartBytes: number;
  /** Bytes the device dropped plus bytes beyond `maxUartBytes`, so far. */
  readonly droppedUartBytes: number;
}

export interface LocalDispatcherOptions {
  clock: Clock;
  /** Host milliseconds allowed for opening the device and flashing. Default 60 000. */
  flashTimeoutMs?: number;
  /**
   * Host milliseconds allowed per second of UART capture. Default 4 000: a simulator or emulator
   * on a loaded host may run slower than real time (measured speeds in docs/backends/sim.md), and
   * the deadline must not stop a healthy job.
   */
  runMsPerUartSecond?: number;
  /** Extra host milliseconds on top of the deadline, for process start-up and teardown. Default 10 000. */
  marginMs?: number;
  /** How long a backend that ignores its abort signal keeps the board before the next job starts. Default 5 000. */
  abortGraceMs?: number;
}

interface Entry {
  request: DispatchRequest;
  controller: AbortController;
  resolve: (run: FirmwareRun) => void;
  reject: (err: unknown) => void;
}

interface BoardQueue {
  running: Entry | undefined;
  waiting: Entry[];
  /** Settles when the running job's backend call has returned (or its grace ran out). */
  idle: Promise<void>;
}

/**
 * Runs jobs on local backends: FIFO per board instance (the board itself unless the request names one), one job per instance at a time, each with a deadline
 * and an abort that a backend ignoring its signal cannot outlast. A bench worker
 * (harness/worker/bench-worker.ts) runs the jobs it claims through it.
 */
export class LocalDispatcher {
  private readonly clock: Clock;
  private readonly flashTimeoutMs: number;
  private readonly runMsPerUartSecond: number;
  private readonly marginMs: number;
  private readonly abortGraceMs: number;
  private readonly boards = new Map<string, BoardQueue>();
  private closed = false;

  constructor(options: LocalDispatcherOptions) {
    this.clock = options.clock;
    this.flashTimeoutMs = options.flashTimeoutMs ?? 60_000;
    this.runMsPerUartSecond = options.runMsPerUartSecond ?? 4_000;
    this.marginMs = options.marginMs ?? 10_000;
    this.abortGraceMs = options.abortGraceMs ?? 5_000;
  }

  /**
   * The wall-clock budget of one job, in host milliseconds. `budget` is the backend's own
   * (`Backend.jobBudgetMs`): the deadline never undercuts it, so a hung tool is stopped by its own
   * timeout (which reports exit status and output) rather than by this deadline.
   */
  deadlineMs(uartSeconds: number, budget?: JobBudget): number {
    return Math.ceil(this.flashBudgetMs(budget) + this.runBudgetMs(uartSeconds, budget) + this.marginMs);
  }

  private flashBudgetMs(budget: JobBudget | undefined): number {
    return Math.max(this.flashTimeoutMs, budget?.flashMs ?? 0);
  }

  /** UART capture runs alongside the release of reset, so the longer of the two. */
  private runBudgetMs(uartSeconds: number, budget: JobBudget | undefined): number {
    return Math.max(uartSeconds * this.runMsPerUartSecond, budget?.resetMs ?? 0);
  }

  dispatch(request: DispatchRequest): Promise<FirmwareRun> {
    if (this.closed) return Promise.reject(new BackendError('cancelled', `job ${request.jobId} not started: the dispatcher is closed`));
    return new Promise<FirmwareRun>((resolve, reject) => {
      const lane = request.instance ?? request.board.id;
      const queue = this.queueOf(lane);
      queue.waiting.push({ request, controller: new AbortController(), resolve, reject });
      this.pump(lane);
    });
  }

  cancel(jobId: string, reason: string): boolean {
    for (const queue of this.boards.values()) {
      const index = queue.waiting.findIndex((e) => e.request.jobId === jobId);
      if (index >= 0) {
        const [entry] = queue.waiting.splice(index, 1);
        entry!.reject(new BackendError('cancelled', `job ${jobId} cancelled before it started: ${reason}`));
        return true;
      }
      if (queue.running?.request.jobId === jobId) {
        queue.running.controller.abort(new BackendError('cancelled', `job ${jobId} cancelled: ${reason}`));
        return true;
      }
    }
    return false;
  }

  waiting(boardId: string): number {
    return this.boards.get(boardId)?.waiting.length ?? 0;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const queue of this.boards.values()) {
      for (const entry of queue.waiting.splice(0)) {
        entry.reject(new BackendError('cancelled', `job ${entry.request.jobId} cancelled before it started: the dispatcher is closing`));
      }
      queue.running?.controller.abort(new BackendError('cancelled', `job ${queue.running.request.jobId} cancelled: the dispatcher is closing`));
    }
    await Promise.all([...this.boards.values()].map((q) => q.idle));
  }

  private queueOf(boardId: string): BoardQueue {
    let queue = this.boards.get(boardId);
    if (!queue) {
      queue = { running: undefined, waiting: [], idle: Promise.resolve() };
      this.boards.set(boardId, queue);
    }
    return queue;
  }

  private pump(boardId: string): void {
    const queue = this.queueOf(boardId);
    if (queue.running || queue.waiting.length === 0) return;
    const entry = queue.waiting.shift()!;
    queue.running = entry;
    queue.idle = this.runOne(entry).finally(() => {
      queue.running = undefined;
      this.pump(boardId);
    });
  }

  /** Runs one job to its end; settles when the board may take the next job. */
  private async runOne(entry: Entry): Promise<void> {
    const { request, controller } = entry;
    const { signal } = controller;
    const budget = request.backend.jobBudgetMs?.(request.board);
    const deadlineMs = this.deadlineMs(request.uartSeconds, budget);
    let waitingFor = `${request.backend.name} to open and flash ${request.board.id}`;
    const timer = this.clock.setTimeout(() => {
      // A `timeout` abort reason: backends that keep board health count it as an infrastructure
      // failure (a job stopped by its deadline is the bench's fault, not a cancellation).
      controller.abort(
        new BackendError(
          'timeout',
          `job ${request.jobId} stopped by its deadline: it did not finish within ${deadlineMs} ms (flash budget ${this.flashBudgetMs(budget)} ms` +
            `${budget ? ` (the ${request.backend.name} backend's own, at least ${this.flashTimeoutMs} ms)` : ''} + ` +
            `run budget ${this.runBudgetMs(request.uartSeconds, budget)} ms (${request.uartSeconds} s of UART at ${this.runMsPerUartSecond} ms per second` +
            `${budget ? `, at least the ${budget.resetMs} ms reset budget` : ''}) + ${this.marginMs} ms margin); ` +
            `it was still waiting for ${waitingFor}`,
        ),
      );
    }, deadlineMs);

    let phaseWrites: Promise<void> = Promise.resolve();
    const phase = (p: JobPhase) => {
      phaseWrites = phaseWrites.then(() => request.onPhase?.(p));
    };

    // A backend that ignores its signal must not hold the job for ever: the abort settles it.
    const aborted = new Promise<never>((_, reject) => {
      const fail = () => reject(signal.reason);
      if (signal.aborted) fail();
      else signal.addEventListener('abort', fail, { once: true });
    });
    aborted.catch(() => undefined);

    let backendCall: Promise<unknown> = Promise.resolve();
    const capture = capturingBackend(request);
    try {
      phase('flashing');
      await Promise.race([phaseWrites, aborted]);
      const run = runFirmware(capture.backend, request.board, request.image, {
        clock: this.clock,
        uartSeconds: request.uartSeconds,
        maxUartBytes: request.maxUartBytes,
        signal,
        ...(request.instance === undefined ? {} : { instance: request.instance }),
        onFlashed: () => {
          waitingFor = `${request.uartSeconds} s of UART capture on ${request.backend.name}`;
          phase('running');
        },
      });
      backendCall = run.catch(() => undefined);
      const result = await Promise.race([run, aborted]);
      await Promise.race([phaseWrites, aborted]);
      entry.resolve(result);
    } catch (err) {
      // The abort reason is the most precise account (timeout or cancel), whatever the backend threw.
      entry.reject(signal.aborted && signal.reason instanceof BackendError ? signal.reason : err);
    } finally {
      this.clock.clearTimeout(timer);
      // The job is settled: a backend that ignores its abort and prints on is not its output.
      capture.stop();
    }
    if (signal.aborted) await Promise.race([backendCall, sleep(this.clock, this.abortGraceMs)]);
    else await backendCall;
  }
}

/**
 * `request.backend`, with the UART of the device it opens captured for `request.onUart` (the
 * backend unchanged without one). The capture subscribes as the device opens, before
 * `runFirmware` does, so it sees every chunk from the first.
 */
function capturingBackend(request: DispatchRequest): { backend: Backend; stop: () => void } {
  const { backend, onUart, onOpen } = request;
  if (!onUart && !onOpen) return { backend, stop: () => undefined };
  let unsubscribe: (() => void) | undefined;
  let stopped = false;
  const capturing: Backend = {
    get name() {
      return backend.name;
    },
    availability: (board) => backend.availability(board),
    open: async (board, options) => {
      const device = await backend.open(board, options);
      if (!stopped) onOpen?.(device);
      if (!stopped && onUart) {
        const capture = new UartCapture(device, request.maxUartBytes);
        unsubscribe = device.onUart((chunk) => {
          capture.add(chunk);
          onUart(capture);
        });
      }
      return device;
    },
  };
  const stop = () => {
    stopped = true;
    unsubscribe?.();
  };
  return { backend: capturing, stop };
}

/** What one device printed, kept by the rule of `runFirmware`: up to `maxUartBytes`, the rest counted. */
class UartCapture implements UartSoFar {
  readonly uart: UartChunk[] = [];
  uartBytes = 0;
  private overLimitBytes = 0;

  constructor(
    private readonly device: Device,
    private readonly maxUartBytes: number,
  ) {}

  get timeBase(): TimeBase {
    return this.device.timeBase;
  }

  get clockSource(): string | undefined {
    return this.device.clockSource;
  }

  get droppedUartBytes(): number {
    return this.device.droppedUartBytes + this.overLimitBytes;
  }

  add(chunk: UartChunk): void {
    const keptBytes = Math.max(0, Math.min(this.maxUartBytes - this.uartBytes, chunk.bytes.length));
    if (keptBytes > 0) {
      this.uart.push(keptBytes === chunk.bytes.length ? chunk : { atNanos: chunk.atNanos, bytes: chunk.bytes.slice(0, keptBytes) });
      this.uartBytes += keptBytes;
    }
    this.overLimitBytes += chunk.bytes.length - keptBytes;
  }
}
