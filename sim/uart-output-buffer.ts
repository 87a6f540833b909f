import type { EngineUartChunk } from './sim-engine.js';

/**
 * Collects the bytes a firmware transmits into chunks. A chunk closes at a line feed or when
 * `maxChunkBytes` is reached, so `until` conditions see whole lines promptly; the run loop takes
 * what is left at every slice end, so no chunk spans more than one slice of simulated time.
 * Each chunk is stamped with the simulated time of its first byte.
 */
export class UartOutputBuffer {
  private bytes: number[] = [];
  private firstAtNanos = 0;
  private closed: EngineUartChunk[] = [];

  constructor(private readonly maxChunkBytes = 256) {}

  /** Adds one byte sent at `atNanos`; returns true when a chunk is ready to take. */
  push(byte: number, atNanos: number): boolean {
    if (this.bytes.length === 0) this.firstAtNanos = atNanos;
    this.bytes.push(byte);
    if (byte === 0x0a || this.bytes.length >= this.maxChunkBytes) {
      this.close();
      return true;
    }
    return false;
  }

  /** The oldest closed chunk, or with `partial` the open one too. */
  take(options: { partial: boolean }): EngineUartChunk | undefined {
    if (this.closed.length === 0 && options.partial && this.bytes.length > 0) this.close();
    return this.closed.shift();
  }

  private close() {
    this.closed.push({ atNanos: this.firstAtNanos, bytes: Uint8Array.from(this.bytes) });
    this.bytes = [];
  }
}
