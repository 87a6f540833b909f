import type net from 'node:net';
import type { Clock } from '../core/clock.js';
import { BackendError, NANOS_PER_MS, type UartChunk } from './backend.js';
import { UartFanout } from './uart-fanout.js';

/**
 * The UART of an emulator that serves serial0 on a socket (QEMU's unix socket, Renode's server
 * socket terminal), for devices with `timeBase: 'wall'`: bytes are stamped with the host time
 * since reset release, delivered to every `onUart` listener, and counted as dropped while no
 * release applies (held in reset, or the session that sent them is over) instead of being lost.
 */
export class SocketUart {
  private readonly fanout = new UartFanout();
  private dropped = 0;

  constructor(private readonly clock: Clock) {}

  /** Bytes that arrived while `releasedAtMs()` was undefined: counted, not delivered. */
  get droppedBytes(): number {
    return this.dropped;
  }

  /** `Device.onUart`: adds `listener`; returns the function that removes it. */
  subscribe(listener: (chunk: UartChunk) => void): () => void {
    return this.fanout.subscribe(listener);
  }

  /** Removes every listener (on close). */
  clear(): void {
    this.fanout.clear();
  }

  /** Nanoseconds of host time since `releasedAtMs` (never negative); 0 while held in reset. */
  elapsedNanos(releasedAtMs: number | undefined): number {
    if (releasedAtMs === undefined) return 0;
    return Math.max(0, (this.clock.nowMs() - releasedAtMs) * NANOS_PER_MS);
  }

  /**
   * Delivers what `socket` receives, stamped relative to `releasedAtMs()` (read per chunk), and
   * then calls `onDelivered` (a run waiting for `until` looks again); while `releasedAtMs()` is
   * undefined the bytes are counted as dropped.
   */
  capture(socket: net.Socket, releasedAtMs: () => number | undefined, onDelivered: () => void): void {
    socket.on('data', (chunk: Buffer) => {
      const released = releasedAtMs();
      if (released === undefined) {
        this.dropped += chunk.byteLength;
        return;
      }
      const atNanos = this.elapsedNanos(released);
      const bytes = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      this.fanout.emit({ atNanos, bytes });
      onDelivered();
    });
  }
}

/**
 * `Device.writeUart` over an emulator's serial socket: resolves once `socket` has taken the bytes;
 * a failed write is `serial-lost`, naming `emulator` ("QEMU", "Renode").
 */
export function writeUartSocket(socket: net.Socket, bytes: Uint8Array, emulator: string): Promise<void> {
  return new Promise<void>((resolve, reject) =>
    socket.write(bytes, (err) => (err ? reject(new BackendError('serial-lost', `UART write to ${emulator} failed: ${err.message}`, { cause: err })) : resolve())),
  );
}
