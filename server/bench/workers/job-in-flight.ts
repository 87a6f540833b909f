import type { TimerHandle } from '../../../core/clock.js';
import type { JobPush, UartCaptureReport } from '../../../harness/worker/worker-link.js';
import type { JobRecord, UartRecord } from '../../storage/bench/bench-store.js';
import type { BenchLimits } from '../domain/bench-limits.js';
import { type HeldUart, uartRecordOf } from './uart-record.js';

/** What the gateway keeps of a job a worker reported through it (its UART as `HeldUart`). */
export interface JobInFlight extends HeldUart {
  job: JobRecord;
  workerId: string;
  claimMs: number | null;
  capture: Omit<UartCaptureReport, 'uart'>;
  saveTimer: TimerHandle | undefined;
  saving: Promise<void>;
  watchers: Set<(push: JobPush) => void>;
}

/** The UART record of a job in flight as the store keeps it, within the bench's limits (what the worker dropped and what was dropped here). */
export function recordOf(entry: JobInFlight, limits: UartLimits): UartRecord {
  return uartRecordOf({ ...entry.capture, droppedUartBytes: entry.capture.droppedUartBytes + entry.droppedHere, uart: entry.chunks }, uartBoundsOf(limits));
}

type UartLimits = Pick<BenchLimits, 'maxUartChunksPerJob' | 'maxUartBytesPerJob'>;

/** The bench's UART limits as `uartRecordOf` takes them. */
export function uartBoundsOf(limits: UartLimits): { maxChunks: number; maxBytes: number } {
  return { maxChunks: limits.maxUartChunksPerJob, maxBytes: limits.maxUartBytesPerJob };
}
