import type { UartSoFar } from '../dispatcher.js';
import type { UartCaptureReport, WorkerLink } from './worker-link.js';

/** Sends a job's new UART chunks to the server in order, as the dispatcher's capture grows. */
export class UartReporter {
  private soFar: UartSoFar | undefined;
  private sentChunks = 0;
  private sentBytes = 0;
  private sending: Promise<void> = Promise.resolve();

  constructor(
    private readonly jobId: string,
    private readonly link: WorkerLink,
    private readonly logError: (message: string, cause?: unknown) => void,
  ) {}

  report(soFar: UartSoFar): void {
    this.soFar = soFar;
    const chunks = soFar.uart.slice(this.sentChunks);
    if (chunks.length === 0) return;
    const offset = this.sentBytes;
    this.sentChunks = soFar.uart.length;
    for (const c of chunks) this.sentBytes += c.bytes.length;
    this.sending = this.sending
      .then(() =>
        this.link.uart(this.jobId, { offset, chunks, timeBase: soFar.timeBase, clockSource: soFar.clockSource, droppedUartBytes: soFar.droppedUartBytes }),
      )
      .catch((err: unknown) => this.logError(`reporting the UART of job ${this.jobId} failed`, err));
  }

  /** A copy of everything captured so far (the live capture keeps growing). */
  capture(): UartCaptureReport | null {
    const s = this.soFar;
    if (!s) return null;
    return { timeBase: s.timeBase, clockSource: s.clockSource, uart: [...s.uart], droppedUartBytes: s.droppedUartBytes };
  }

  flushed(): Promise<void> {
    return this.sending;
  }
}
