import type { Board } from '../boards/board-schema.js';
import {
  type Backend,
  BackendError,
  type FirmwareImage,
  NANOS_PER_SECOND,
  type RunStop,
  type TimeBase,
  type UartChunk,
} from '../backends/backend.js';
import type { Clock } from '../core/clock.js';

/** What one flash-and-capture run produced: the body of a finished job. */
export interface FirmwareRun {
  timeBase: TimeBase;
  /** The device's `clockSource`, when it states one. */
  clockSource?: string;
  stop: RunStop;
  /** Captured UART chunks, in order, timestamps relative to reset release. */
  uart: UartChunk[];
  uartBytes: number;
  /** Bytes dropped by the device plus bytes beyond `maxUartBytes`. */
  droppedUartBytes: number;
  /** Host milliseconds spent opening and flashing, and running. */
  flashMs: number;
  runMs: number;
}

export interface RunFirmwareOptions {
  clock: Clock;
  /** How long to capture UART after reset release, in seconds of the device's time base. */
  uartSeconds: number;
  /** Captured bytes beyond this are counted as dropped, never stored. */
  maxUartBytes: number;
  signal?: AbortSignal;
  /** The pool instance the job holds, given to `backend.open` (decision 0550). */
  instance?: string;
  /** Called for every chunk kept, as it arrives (live output). */
  onUart?: (chunk: UartChunk) => void;
  /** Called once the image is flashed, just before reset is released (job state `running`). */
  onFlashed?: () => void;
}

/**
 * Opens `board` on `backend`, flashes `image`, releases reset with capture already attached,
 * and captures UART for `uartSeconds`. Always closes the device. Throws `BackendError`.
 */
export async function runFirmware(backend: Backend, board: Board, image: FirmwareImage, options: RunFirmwareOptions): Promise<FirmwareRun> {
  const { clock } = options;
  const startedMs = clock.nowMs();
  const device = await backend.open(board, { signal: options.signal, ...(options.instance === undefined ? {} : { instance: options.instance }) });
  const uart: UartChunk[] = [];
  let uartBytes = 0;
  let overLimitBytes = 0;
  // Attach before flash/run: the first byte after reset release must be captured.
  const unsubscribe = device.onUart((chunk) => {
    const room = options.maxUartBytes - uartBytes;
    if (room <= 0) {
      overLimitBytes += chunk.bytes.length;
      return;
    }
    const kept = chunk.bytes.length <= room ? chunk : { atNanos: chunk.atNanos, bytes: chunk.bytes.slice(0, room) };
    overLimitBytes += chunk.bytes.length - kept.bytes.length;
    uart.push(kept);
    uartBytes += kept.bytes.length;
    options.onUart?.(kept);
  });
  try {
    await device.flash(image, { signal: options.signal });
    const flashedMs = clock.nowMs();
    options.onFlashed?.();
    const stop = await device.run(Math.round(options.uartSeconds * NANOS_PER_SECOND), { signal: options.signal });
    return {
      timeBase: device.timeBase,
      clockSource: device.clockSource,
      stop,
      uart,
      uartBytes,
      droppedUartBytes: device.droppedUartBytes + overLimitBytes,
      flashMs: flashedMs - startedMs,
      runMs: clock.nowMs() - flashedMs,
    };
  } catch (err) {
    if (err instanceof BackendError) throw err;
    throw new BackendError('internal', `backend ${backend.name} failed unexpectedly: ${(err as Error).message}`, { cause: err });
  } finally {
    unsubscribe();
    await device.close();
  }
}

/** Concatenates captured chunks into one byte array. */
export function concatUart(chunks: readonly UartChunk[]): Uint8Array {
  const total = chunks.reduce((n, c) => n + c.bytes.length, 0);
  const out = new Uint8Array(total);
  let o = 0;
  for (const c of chunks) {
    out.set(c.bytes, o);
    o += c.bytes.length;
  }
  return out;
}
