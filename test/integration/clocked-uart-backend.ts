import { type Availability, type Backend, BackendError, type Device, type FirmwareImage, NANOS_PER_SECOND, type RunStop, type UartChunk } from '../../backends/backend.js';
import { UartFanout } from '../../backends/uart-fanout.js';
import type { Board } from '../../boards/board-schema.js';
import type { Clock, TimerHandle } from '../../core/clock.js';

/** Host milliseconds between two lines of the clocked board. */
export const CLOCKED_LINE_PERIOD_MS = 100;

/** What the clocked board prints in its first `lines` lines: `line 1\r\n` … `line <lines>\r\n`. */
export const clockedTranscript = (lines: number) => Array.from({ length: lines }, (_, i) => `line ${i + 1}\r\n`).join('');

/**
 * A wall-time board whose run takes time on the injected clock, as a real board's does (the mock's
 * runs are instant): flashing is instant, and after reset release it prints `line <k>\r\n` at
 * k × 100 ms until `uart_seconds` have passed, stopping at once when its signal aborts. Registered
 * as the `mock` backend, so the bench's default board choice picks it.
 */
export class ClockedUartBackend implements Backend {
  readonly name = 'mock' as const;
  constructor(
    private readonly clock: Clock,
    /** What its devices state as their `clockSource` (as QEMU states its icount setting). */
    private readonly clockSource?: string,
  ) {}

  async availability(): Promise<Availability> {
    return { available: true };
  }

  async open(board: Board): Promise<Device> {
    return new ClockedDevice(board, this.clock, this.clockSource);
  }
}

class ClockedDevice implements Device {
  readonly timeBase = 'wall' as const;
  readonly droppedUartBytes = 0;
  private readonly uart = new UartFanout();
  /** When reset was released (host ms), for the device time of echoed bytes. */
  private releasedAtMs: number | undefined;

  constructor(
    readonly board: Board,
    private readonly clock: Clock,
    readonly clockSource?: string,
  ) {}

  async flash(_image: FirmwareImage, options: { signal?: AbortSignal } = {}): Promise<void> {
    if (options.signal?.aborted) throw new BackendError('cancelled', 'flash cancelled');
  }

  onUart(listener: (chunk: UartChunk) => void): () => void {
    return this.uart.subscribe(listener);
  }

  run(durationNanos: number, options: { signal?: AbortSignal } = {}): Promise<RunStop> {
    const { signal } = options;
    const endMs = durationNanos / 1_000_000;
    this.releasedAtMs = this.clock.nowMs();
    return new Promise((resolve, reject) => {
      let line = 0;
      let timer: TimerHandle | undefined;
      const onAbort = () => {
        if (timer !== undefined) this.clock.clearTimeout(timer);
        reject(new BackendError('cancelled', `run cancelled after ${line} lines`));
      };
      const next = () => {
        line++;
        const atMs = line * CLOCKED_LINE_PERIOD_MS;
        this.uart.emit({ atNanos: atMs * 1_000_000, bytes: new TextEncoder().encode(`line ${line}\r\n`) });
        if (atMs >= endMs) {
          signal?.removeEventListener('abort', onAbort);
          resolve({ reason: 'elapsed', elapsedNanos: Math.round((atMs / 1000) * NANOS_PER_SECOND) });
          return;
        }
        timer = this.clock.setTimeout(next, CLOCKED_LINE_PERIOD_MS);
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      timer = this.clock.setTimeout(next, CLOCKED_LINE_PERIOD_MS);
    });
  }

  /** Echoes what it receives at once (as the mock does), so serial input has something to show. */
  async writeUart(bytes: Uint8Array): Promise<void> {
    this.uart.emit({ atNanos: (this.clock.nowMs() - (this.releasedAtMs ?? this.clock.nowMs())) * 1_000_000, bytes });
  }

  async reset(): Promise<void> {}

  async close(): Promise<void> {
    this.uart.clear();
  }
}
