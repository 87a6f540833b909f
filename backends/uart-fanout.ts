import type { UartChunk } from './backend.js';

/**
 * The listeners of one device's UART: `Device.onUart` subscribes here, the device emits every
 * chunk to all of them, and `close` clears them so a closed device holds no caller's callbacks.
 * Every backend's device delivers UART bytes through one of these.
 */
export class UartFanout {
  private readonly listeners = new Set<(chunk: UartChunk) => void>();

  /** Adds `listener` (once, however often it is added); returns the function that removes it. */
  subscribe(listener: (chunk: UartChunk) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Calls every listener with `chunk`, in the order they subscribed. */
  emit(chunk: UartChunk): void {
    // A Set visits entries added during the loop and skips ones deleted before their turn, so a
    // listener that unsubscribes itself (or another) while being called is handled as expected.
    for (const listener of this.listeners) listener(chunk);
  }

  /** Removes every listener (on close). */
  clear(): void {
    this.listeners.clear();
  }

  /** How many listeners are subscribed. */
  get size(): number {
    return this.listeners.size;
  }
}
