import { type Availability, type Backend, BackendError, type Device, type FirmwareImage, NANOS_PER_SECOND } from '../../backends/backend.js';
import { MockBackend } from '../../backends/mock/mock-backend.js';
import { afterFailure, afterSuccess, type BoardHealth, type QuarantineStore } from '../../backends/probe/quarantine-store.js';
import type { Board } from '../../boards/board-schema.js';
import type { Clock } from '../../core/clock.js';
import type { BoardHealthControl, HealthCheckOutcome } from '../../backends/backend.js';

/** A promise with its resolve, to hold a backend call until the test lets it go. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

export interface FakeBenchBackendOptions {
  clock: Clock;
  /** Board health, as the probe backend keeps it (the server's `SqlBoardHealthStore` in these tests). */
  store: QuarantineStore;
  /** Boards "attached" to this fake bench; others are unavailable. */
  attached: readonly string[];
  /** Consecutive infrastructure failures that quarantine a board (the bench file's `quarantineAfterFailures`). */
  quarantineAfterFailures: number;
  /** Without it the backend has no `healthCheck` method (a backend that only quarantines and releases). */
  withHealthCheck: boolean;
}

/**
 * A bench of real boards as far as the server can tell, without hardware or processes: it keeps
 * board health exactly as the probe backend does (the same `afterFailure`/`afterSuccess` rules
 * on a `QuarantineStore`, quarantine reason from `quarantineReason`), implements
 * `BoardHealthControl`, and runs firmware on the mock (simulated time, so the bench's fake clock
 * needs no advancing). Tests break it the ways a real bench breaks: an infrastructure failure
 * while flashing, an unplugged board, an availability check that throws, a health check that hangs.
 */
export class FakeBenchBackend implements Backend, BoardHealthControl {
  readonly name = 'probe' as const;
  /** Boards whose flash fails like a probe that lost its target (an infrastructure failure). */
  readonly brokenProbe = new Set<string>();
  /** Boards whose serial device is gone (availability says so). */
  readonly unplugged = new Set<string>();
  /** Boards whose availability check throws. */
  readonly availabilityThrows = new Set<string>();
  /** Availability checks per board (to see the cache at work). */
  readonly availabilityCalls = new Map<string, number>();
  /** When set for a board, `open` waits for it (a job held at the start of its run). */
  readonly holdOpen = new Map<string, Promise<void>>();
  /** When set, `healthCheck` waits for it (or for its abort signal) before checking. */
  holdHealthCheck: Promise<void> | undefined;
  /** Resolved each time a health check starts. */
  healthCheckStarted = deferred();
  readonly healthCheck: BoardHealthControl['healthCheck'];
  private readonly mock = new MockBackend();

  constructor(private readonly options: FakeBenchBackendOptions) {
    this.healthCheck = options.withHealthCheck ? (boardId, opts) => this.runHealthCheck(boardId, opts?.signal) : undefined;
  }

  async availability(board: Board): Promise<Availability> {
    this.availabilityCalls.set(board.id, (this.availabilityCalls.get(board.id) ?? 0) + 1);
    if (this.availabilityThrows.has(board.id)) throw new Error(`udevadm info printed garbage for ${board.id}`);
    if (!this.options.attached.includes(board.id)) return { available: false, reason: `board ${board.id} is not attached to this fake bench` };
    // As the probe backend: the hardware before the quarantine.
    if (this.unplugged.has(board.id)) return { available: false, reason: `serial device /dev/ttyFAKE-${board.id} is missing: is ${board.id} plugged in?` };
    const health = await this.options.store.get(board.id);
    if (health.quarantine) return { available: false, reason: health.quarantine.reason };
    return { available: true };
  }

  async open(board: Board): Promise<Device> {
    const health = await this.options.store.get(board.id);
    if (health.quarantine) throw new BackendError('unavailable', `board ${board.id}: ${health.quarantine.reason}`);
    await this.holdOpen.get(board.id);
    const device = await this.mock.open(board);
    const flash = async (image: FirmwareImage, flashOptions?: { signal?: AbortSignal }) => {
      if (this.brokenProbe.has(board.id)) {
        const error = new BackendError('flash-failed', `flash on ${board.id} failed (exit status 1); last output:\n** Programming Failed **`, { exitCode: 1 });
        await this.failed(board.id, error);
        throw error;
      }
      await device.flash(image, flashOptions);
    };
    const run: Device['run'] = async (durationNanos, runOptions) => {
      const stop = await device.run(durationNanos, runOptions);
      // As the probe backend: a run that works resets the count, only a release ends a quarantine.
      if (!(await this.options.store.get(board.id)).quarantine) await this.options.store.put(board.id, afterSuccess());
      return stop;
    };
    return {
      board: device.board,
      timeBase: device.timeBase,
      get droppedUartBytes() {
        return device.droppedUartBytes;
      },
      flash,
      run,
      onUart: (listener) => device.onUart(listener),
      writeUart: (bytes) => device.writeUart(bytes),
      reset: () => device.reset(),
      close: () => device.close(),
    };
  }

  health(boardId: string): Promise<BoardHealth> {
    return this.options.store.get(boardId);
  }

  async release(boardId: string): Promise<void> {
    if (!this.options.attached.includes(boardId)) throw new BackendError('unavailable', `board ${boardId} is not attached to this fake bench`);
    await this.options.store.put(boardId, afterSuccess());
  }

  private async failed(boardId: string, error: BackendError): Promise<void> {
    const before = await this.options.store.get(boardId);
    await this.options.store.put(boardId, afterFailure(before, error.message, this.options.quarantineAfterFailures, this.options.clock.nowMs()));
  }

  private async runHealthCheck(boardId: string, signal: AbortSignal | undefined): Promise<HealthCheckOutcome> {
    if (!this.options.attached.includes(boardId)) throw new BackendError('unavailable', `board ${boardId} is not attached to this fake bench`);
    this.healthCheckStarted.resolve();
    if (this.holdHealthCheck) {
      const aborted = new Promise<void>((resolve) => signal?.addEventListener('abort', () => resolve(), { once: true }));
      await Promise.race([this.holdHealthCheck, aborted]);
      if (signal?.aborted) return { passed: false, reason: `health check on ${boardId} was aborted`, uartText: '' };
    }
    if (this.brokenProbe.has(boardId)) {
      const error = new BackendError('flash-failed', `flash on ${boardId} failed (exit status 1)`, { exitCode: 1 });
      await this.failed(boardId, error);
      return { passed: false, reason: `health check on ${boardId} failed: ${error.message}`, uartText: '' };
    }
    await this.release(boardId);
    return { passed: true, uartText: `health ok on ${boardId}\r\n`, elapsedNanos: 0.25 * NANOS_PER_SECOND };
  }
}
