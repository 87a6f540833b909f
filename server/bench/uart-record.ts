import type { UartSoFar } from '../../harness/dispatcher.js';
import { concatUart, type FirmwareRun } from '../../harness/run-firmware.js';
import type { UartRecord } from '../store/bench-store.js';

/**
 * Host milliseconds between two saves of a running job's UART: a crash loses at most this much of
 * what the firmware printed, and a chatty firmware costs at most one write of at most
 * `maxUartBytesPerJob` (64 KiB by default) per job per second, whatever its chunk rate.
 */
export const UART_SAVE_INTERVAL_MS = 1_000;

/** A capture as stored: every kept byte, and chunk boundaries up to `maxChunks` (the rest counted). */
export function uartRecordOf(capture: Pick<UartSoFar | FirmwareRun, 'uart' | 'droppedUartBytes' | 'timeBase' | 'clockSource'>, maxChunks: number): UartRecord {
  const bytes = concatUart(capture.uart);
  const chunks: UartRecord['chunks'] = [];
  let offset = 0;
  for (const chunk of capture.uart) {
    if (chunks.length < maxChunks) chunks.push({ atNanos: chunk.atNanos, offset, length: chunk.bytes.length });
    offset += chunk.bytes.length;
  }
  return { bytes, droppedBytes: capture.droppedUartBytes, timeBase: capture.timeBase, clockSource: capture.clockSource, chunks, chunksOmitted: Math.max(0, capture.uart.length - maxChunks) };
}
