import type { UartChunk } from '../../../backends/backend.js';
import type { UartSoFar } from '../../../harness/dispatcher.js';
import { concatUart, type FirmwareRun } from '../../../harness/run-firmware.js';
import type { UartRecord } from '../../storage/bench/bench-store.js';

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

/** What a server holds of a running job's UART as its worker reports it. */
export interface HeldUart {
  /** What the worker reported, up to the job's UART limit. */
  chunks: UartChunk[];
  bytes: number;
  /** Where the worker's reports have reached: `bytes` and what was dropped. */
  reportedBytes: number;
  /** Bytes reported over the limit, or never reported (a gap), counted as dropped. */
  droppedHere: number;
}

/**
 * Adds a worker's report from byte `report.offset` to `held`, keeping at most `maxBytes` in all;
 * returns the chunks newly kept with the offsets they were kept at. A range held already (sent
 * again after a lost answer) is not kept twice; a report starting past what was reported leaves a
 * gap counted as dropped, so no byte is taken for another, and a late report of the gap is ignored.
 */
export function holdReport(held: HeldUart, report: { offset: number; chunks: readonly UartChunk[] }, maxBytes: number): Array<{ offset: number; chunk: UartChunk }> {
  const added: Array<{ offset: number; chunk: UartChunk }> = [];
  if (report.offset > held.reportedBytes) {
    held.droppedHere += report.offset - held.reportedBytes;
    held.reportedBytes = report.offset;
  }
  let offset = report.offset;
  for (const chunk of report.chunks) {
    const end = offset + chunk.bytes.length;
    if (end > held.reportedBytes) {
      const fresh = offset >= held.reportedBytes ? chunk : { atNanos: chunk.atNanos, bytes: chunk.bytes.slice(held.reportedBytes - offset) };
      held.reportedBytes += fresh.bytes.length;
      // Held to the limit the ticket stated: a worker sending more (a leaked token) cannot fill the server's memory.
      const { chunks: [kept], droppedBytes } = keptWithin([fresh], maxBytes - held.bytes);
      held.droppedHere += droppedBytes;
      if (kept) {
        held.chunks.push(kept);
        added.push({ offset: held.bytes, chunk: kept });
        held.bytes += kept.bytes.length;
      }
    }
    offset = end;
  }
  return added;
}

/** Each chunk with the byte offset it starts at. */
export function withOffsets(chunks: readonly UartChunk[]): Array<{ offset: number; chunk: UartChunk }> {
  let offset = 0;
  return chunks.map((chunk) => {
    const at = offset;
    offset += chunk.bytes.length;
    return { offset: at, chunk };
  });
}
