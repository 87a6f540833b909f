import type { UartChunk } from '../../backends/backend.js';
import type { UartSoFar } from '../../harness/dispatcher.js';
import { concatUart, type FirmwareRun } from '../../harness/run-firmware.js';
import type { UartRecord } from '../store/bench-store.js';

/**
 * Host milliseconds between two saves of a running job's UART: a crash loses at most this much of
 * what the firmware printed, and a chatty firmware costs at most one write of at most
 * `maxUartBytesPerJob` (64 KiB by default) per job per second, whatever its chunk rate.
 */
export const UART_SAVE_INTERVAL_MS = 1_000;

/**
 * A capture as stored: its first `maxBytes` bytes (the rest counted in `droppedBytes`: a worker's
 * report is held to the limit its ticket stated, whatever it sends), and chunk boundaries up to
 * `maxChunks` (the rest counted in `chunksOmitted`).
 */
export function uartRecordOf(
  capture: Pick<UartSoFar | FirmwareRun, 'uart' | 'droppedUartBytes' | 'timeBase' | 'clockSource'>,
  limits: { maxChunks: number; maxBytes: number },
): UartRecord {
  const kept = keptWithin(capture.uart, limits.maxBytes);
  const bytes = concatUart(kept.chunks);
  const chunks: UartRecord['chunks'] = [];
  let offset = 0;
  for (const chunk of kept.chunks) {
    if (chunks.length < limits.maxChunks) chunks.push({ atNanos: chunk.atNanos, offset, length: chunk.bytes.length });
    offset += chunk.bytes.length;
  }
  return {
    bytes,
    droppedBytes: capture.droppedUartBytes + kept.droppedBytes,
    timeBase: capture.timeBase,
    clockSource: capture.clockSource,
    chunks,
    chunksOmitted: Math.max(0, kept.chunks.length - limits.maxChunks),
  };
}

/** The chunks holding the first `maxBytes` bytes (the last one cut), and how many bytes were left out. */
export function keptWithin(uart: readonly UartChunk[], maxBytes: number): { chunks: UartChunk[]; droppedBytes: number } {
  const chunks: UartChunk[] = [];
  let room = maxBytes;
  let droppedBytes = 0;
  for (const chunk of uart) {
    const take = Math.min(room, chunk.bytes.length);
    if (take > 0) chunks.push(take === chunk.bytes.length ? chunk : { atNanos: chunk.atNanos, bytes: chunk.bytes.slice(0, take) });
    room -= take;
    droppedBytes += chunk.bytes.length - take;
  }
  return { chunks, droppedBytes };
}

/**
 * A stored capture as chunks again, every byte in one: the record lists at most
 * `maxUartChunksPerJob` boundaries, and the bytes after the last one listed are one more chunk
 * (stamped like the last), not left out: the next save writes these chunks over the record.
 */
export function chunksOfRecord(uart: UartRecord): UartChunk[] {
  const chunks = uart.chunks.map((c) => ({ atNanos: c.atNanos, bytes: uart.bytes.slice(c.offset, c.offset + c.length) }));
  const last = uart.chunks.at(-1);
  const listedThrough = last ? last.offset + last.length : 0;
  if (listedThrough < uart.bytes.length) chunks.push({ atNanos: last?.atNanos ?? 0, bytes: uart.bytes.slice(listedThrough) });
  return chunks;
}
