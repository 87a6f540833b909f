import { NANOS_PER_SECOND } from '../../../backends/backend.js';
import { isoFromMs } from '../../../core/clock.js';
import { type AgentRecord, instanceField, type JobRecord, type SessionRecord, type StopRecord, type UartRecord } from '../../storage/bench/bench-store.js';
import type { AgentRegistrationBody, BoardHealthBody, HealthBody, JobBody, SessionBody } from '../../../wire/bench/bench-schemas.js';
import type { ServiceHealth } from '../domain/bench-status.js';
import { BENCH_API_VERSION } from '../domain/bench-version.js';
import type { KeptBoardHealth } from '../domain/kept-board-health.js';

/**
 * Pure views of the bench: store records as the interface's response bodies (spec
 * `bench-service.md`). No I/O and no clock: what a body says follows from the record alone.
 */

export const isoOrNull = (ms: number | null) => (ms === null ? null : isoFromMs(ms));

/** A job as `GET /api/v1/jobs/{id}` answers it. */
export function jobBody(job: JobRecord): JobBody {
  const decoder = new TextDecoder('utf-8', { fatal: false });
  // A running job's UART saved so far is for a restart to keep, not a live view: `uart` stays
  // null until the job is done or failed.
  const uart = job.state === 'done' || job.state === 'failed' ? job.uart : null;
  return {
    job_id: job.jobId,
    board: job.board,
    ...instanceField(job.board, job.instance),
    session_id: job.sessionId,
    state: job.state,
    firmware: {
      sha256: job.firmware.sha256,
      size_bytes: job.firmware.sizeBytes,
      elf: {
        machine: job.firmware.elf.machine,
        machine_name: job.firmware.elf.machineName,
        entry: job.firmware.elf.entry,
        segments: job.firmware.elf.segments.map((s) => ({ paddr: s.paddr, vaddr: s.vaddr, file_size: s.fileSizeBytes, mem_size: s.memSizeBytes })),
      },
    },
    uart_seconds: job.uartSeconds,
    uart: uart
      ? {
          text: decoder.decode(uart.bytes),
          base64: Buffer.from(uart.bytes).toString('base64'),
          bytes: uart.bytes.length,
          dropped_bytes: uart.droppedBytes,
          time_base: uart.timeBase,
          clock: uart.clockSource ?? null,
          chunks: chunkTexts(uart),
          chunks_omitted: uart.chunksOmitted,
        }
      : null,
    stop: job.stop ? stopBody(job.stop) : null,
    failure: job.failure,
    created_at: isoFromMs(job.createdAtMs),
    started_at: isoOrNull(job.startedAtMs),
    finished_at: isoOrNull(job.finishedAtMs),
    timings_ms: jobTimingsMs(job),
  };
}

/**
 * Chunk texts decoded as one stream, so a character split across two chunks is not turned into
 * two replacement characters: without omitted chunks, the texts concatenate to `uart.text`.
 */
export function chunkTexts(uart: UartRecord): Array<{ at_seconds: number; text: string }> {
  const decoder = new TextDecoder('utf-8', { fatal: false });
  const out = uart.chunks.map((c) => ({
    at_seconds: c.atNanos / NANOS_PER_SECOND,
    text: decoder.decode(uart.bytes.subarray(c.offset, c.offset + c.length), { stream: true }),
  }));
  const tail = decoder.decode();
  if (tail && out.length > 0) out[out.length - 1]!.text += tail;
  return out;
}

/**
 * `timings_ms` of a job. A finished run reports the durations the run itself measured; a job that
 * failed (or timed out) has none, so the phases it reached are timed from the recorded state
 * changes instead: flash from `flashing` to `running` (or to the failure when it failed while
 * flashing), run from `running` to the failure. A phase never reached stays null.
 */
export function jobTimingsMs(job: JobRecord): JobBody['timings_ms'] {
  const { createdAtMs, startedAtMs, runningAtMs, finishedAtMs } = job;
  const flashEndMs = runningAtMs ?? (job.state === 'failed' ? finishedAtMs : null);
  return {
    queued: startedAtMs === null ? null : startedAtMs - createdAtMs,
    flash: job.flashMs ?? (startedAtMs !== null && flashEndMs !== null ? flashEndMs - startedAtMs : null),
    run: job.runMs ?? (runningAtMs !== null && finishedAtMs !== null && job.state === 'failed' ? finishedAtMs - runningAtMs : null),
  };
}


export function sessionBody(s: SessionRecord): SessionBody {
  return {
    session_id: s.sessionId,
    board: s.board,
    ...instanceField(s.board, s.instance),
    state: s.state,
    idle_seconds: s.idleSeconds,
    created_at: isoFromMs(s.createdAtMs),
    expires_at: isoFromMs(s.expiresAtMs),
    ended_at: isoOrNull(s.endedAtMs),
    last_heartbeat_at: isoOrNull(s.lastHeartbeatAtMs),
  };
}


export function stopBody(stop: StopRecord): NonNullable<JobBody['stop']> {
  const elapsed_seconds = stop.elapsedNanos / NANOS_PER_SECOND;
  if (stop.reason === 'exited') return { reason: 'exited', exit_code: stop.exitCode, elapsed_seconds };
  if (stop.reason === 'crashed') return { reason: 'crashed', message: stop.message, elapsed_seconds };
  return { reason: stop.reason, elapsed_seconds };
}

/** A board's health as the backend keeping it stores it (`health` of `GET /admin` and of the administrator's answers). */
export function healthBody({ backend, record: health }: KeptBoardHealth): BoardHealthBody {
  return {
    backend,
    consecutive_failures: health.consecutiveFailures,
    last_failure: health.lastFailure ?? null,
    quarantined: health.quarantine !== undefined,
    quarantined_since: health.quarantine ? isoFromMs(health.quarantine.sinceMs) : null,
    quarantine_reason: health.quarantine?.reason ?? null,
  };
}

/** `POST /api/v1/agents/register`: the token is shown this once. */
export function agentRegistrationBody({ agent, token }: { agent: AgentRecord; token: string }): AgentRegistrationBody {
  return { agent_id: agent.agentId, label: agent.label, token, created_at: isoFromMs(agent.createdAtMs) };
}

/** `GET /api/v1/health`. */
export function serviceHealthBody(health: ServiceHealth): HealthBody {
  return {
    status: health.status,
    version: BENCH_API_VERSION,
    uptime_seconds: health.uptimeSeconds,
    boards: health.boards,
    database: health.database,
    storage: health.storage,
  };
}
