import { Duplex } from 'node:stream';

/**
 * Two connected in-memory streams, as two ends of a socket: what one writes the other reads, an
 * `end` on one ends the other's reading, and destroying one closes both. A write waits for the
 * reader to take what was pushed (backpressure, as a socket's window), so what waits between them
 * is bounded by the reader's buffer. Neither stays half open (`allowHalfOpen: false`, a socket's default).
 */
export function duplexPair(): [Duplex, Duplex] {
  const a = new PairEnd();
  const b = new PairEnd();
  a.peer = b;
  b.peer = a;
  return [a, b];
}

class PairEnd extends Duplex {
  peer!: PairEnd;
  /** The peer's write waiting for this end to be read again. */
  resumeWriter: (() => void) | undefined;

  constructor() {
    super({ allowHalfOpen: false });
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    if (this.peer.push(chunk)) done();
    else this.peer.resumeWriter = done;
  }

  override _final(done: (err?: Error | null) => void): void {
    this.peer.push(null);
    done();
  }

  override _read(): void {
    const resume = this.resumeWriter;
    this.resumeWriter = undefined;
    resume?.();
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    const resume = this.resumeWriter;
    this.resumeWriter = undefined;
    resume?.();
    if (!this.peer.destroyed) this.peer.destroy();
    done(err);
  }
}
