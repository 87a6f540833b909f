import type { Clock, TimerHandle } from '../../core/clock.js';
import type { UartSoFar } from '../../harness/dispatcher.js';
import { concatUart, type FirmwareRun } from '../../harness/run-firmware.js';
import type { Logger } from '../http/logger.js';
import type { BenchStore, UartRecord } from '../store/bench-store.js';
import type { JobLive } from './job-live.js';

/**
 * Host milliseconds between two saves of a running job's UART: a crash loses at most this much of
 * what the firmware printed, and a chatty firmware costs at most one write of at most
 * `maxUartBytesPerJob` (64 KiB by default) per job per second, whatever its chunk rate.
 */
export const UART_SAVE_INTERVAL_MS = 1_000;

/** A capture as stored: every kept byte, and chunk boundaries up to `maxChunks` (the rest counted). */
export function uartRecordOf(capture: UartSoFar | FirmwareRun, maxChunks: number): UartRecord {
  const bytes = concatUart(capture.uart);
  const chunks: UartRecord['chunks'] = [];
  let offset = 0;
  for (const chunk of capture.uart) {
    if (chunks.length < maxChunks) chunks.push({ atNanos: chunk.atNanos, offset, length: chunk.bytes.length });
    offset += chunk.bytes.length;
  }
  return { bytes, droppedBytes: capture.droppedUartBytes, timeBase: capture.timeBase, clockSource: capture.clockSource, chunks, chunksOmitted: Math.max(0, capture.uart.length - maxChunks) };
}

export interface JobUartKeeperOptions {
  jobId: string;
  clock: Clock;
  store: BenchStore;
  logger: Logger;
  maxUartChunksPerJob: number;
  /** Told of every kept chunk the moment it arrives (live readers). */
  live?: JobLive;
  /** Default `UART_SAVE_INTERVAL_MS`. */
  saveIntervalMs?: number;
}

/**
 * Keeps what one job printed (decision 0212): its `onUart` goes to the dispatcher, the capture is
 * saved to the store at most every `saveIntervalMs` of the injected clock while the job runs (so
 * a restart after a crash finds it), and `record()` gives it to the job's outcome when the job is
 * cancelled or stopped for any reason.
 */
export class JobUartKeeper {
  private soFar: UartSoFar | undefined;
  private timer: TimerHandle | undefined;
  private saving: Promise<void> = Promise.resolve();
  private stopped = false;
  private readonly saveIntervalMs: number;
  /** Chunks of the capture already told to `live`, and the byte offset after them. */
  private publishedChunks = 0;
  private publishedBytes = 0;

  constructor(private readonly options: JobUartKeeperOptions) {
    this.saveIntervalMs = options.saveIntervalMs ?? UART_SAVE_INTERVAL_MS;
  }

  /** For `DispatchRequest.onUart`: a save is due `saveIntervalMs` after the first unsaved chunk. */
  readonly onUart = (soFar: UartSoFar): void => {
    this.soFar = soFar;
    this.publish(soFar);
    if (this.stopped || this.timer !== undefined) return;
    this.timer = this.options.clock.setTimeout(() => {
      this.timer = undefined;
      this.save();
    }, this.saveIntervalMs);
  };

  /** The capture so far as stored, or null when the device delivered nothing. */
  record(): UartRecord | null {
    return this.soFar ? uartRecordOf(this.soFar, this.options.maxUartChunksPerJob) : null;
  }

  /** Stops the periodic saves and waits for one in progress, so none lands after the job's outcome. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.saving;
  }

  /**
   * Saves the capture as it is now and stops (server shutdown: the job stays `running` in the
   * store, and the next start fails it as `interrupted` with this UART).
   */
  async saveAndStop(): Promise<void> {
    await this.stop();
    this.save();
    await this.saving;
  }

  private publish(soFar: UartSoFar): void {
    const { live, jobId } = this.options;
    for (; this.publishedChunks < soFar.uart.length; this.publishedChunks++) {
      const chunk = soFar.uart[this.publishedChunks]!;
      live?.publishUart(jobId, { offset: this.publishedBytes, atNanos: chunk.atNanos, bytes: chunk.bytes });
      this.publishedBytes += chunk.bytes.length;
    }
  }

  private save(): void {
    const uart = this.record();
    if (!uart) return;
    const { jobId, store, logger } = this.options;
    this.saving = this.saving
      .then(() => store.saveJobUart(jobId, uart))
      .catch((err: unknown) => logger.error(`saving the UART of running job ${jobId} failed`, err));
  }
}
