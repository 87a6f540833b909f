import { instanceField, instanceOf } from './bench-store.js';
import { run, type Steps } from '../sql-steps.js';
import type { AgentRecord, ElfSummary, JobRecord, JobState, SessionRecord, SessionState, StopRecord, UartRecord } from './bench-store.js';

/**
 * The bench store's rows (the same columns in SQLite and PostgreSQL) and their mapping to and from
 * the records of `bench-store.ts` (snake_case columns, JSON columns parsed here and nowhere else).
 */

export interface AgentRow {
  agent_id: string;
  label: string;
  token_sha256: string;
  created_at_ms: number;
}

export interface SessionRow {
  session_id: string;
  agent_id: string;
  board: string;
  state: SessionState;
  idle_seconds: number;
  created_at_ms: number;
  expires_at_ms: number;
  ended_at_ms: number | null;
  last_heartbeat_at_ms: number | null;
  instance: string | null;
}

export interface LeaseRow {
  instance: string;
  board: string;
  holder_kind: 'session' | 'job';
  holder_id: string;
  agent_id: string;
  agent_label: string;
  expires_at_ms: number | null;
  idle_seconds: number | null;
}

export interface JobRow {
  job_id: string;
  agent_id: string;
  board: string;
  session_id: string | null;
  state: JobState;
  firmware_sha256: string;
  firmware_size_bytes: number;
  elf_json: string;
  uart_seconds: number;
  uart_bytes: Buffer | null;
  uart_json: string | null;
  stop_json: string | null;
  failure_kind: string | null;
  failure_message: string | null;
  created_at_ms: number;
  started_at_ms: number | null;
  running_at_ms: number | null;
  finished_at_ms: number | null;
  flash_ms: number | null;
  run_ms: number | null;
  worker_id: string | null;
  claim_expires_at_ms: number | null;
  cancel_reason: string | null;
  instance: string | null;
  /** The last serial input number queued, and the last the worker acknowledged (decision 0420). */
  serial_next_seq: number;
  serial_acked_seq: number;
}

export function* insertSession(s: SessionRecord): Steps<void> {
  yield* run(
    `INSERT INTO sessions (session_id, agent_id, board, state, idle_seconds, created_at_ms, expires_at_ms, ended_at_ms, last_heartbeat_at_ms, instance)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [s.sessionId, s.agentId, s.board, s.state, s.idleSeconds, s.createdAtMs, s.expiresAtMs, s.endedAtMs, s.lastHeartbeatAtMs, instanceOf(s)],
  );
}

export const agentFromRow = (r: AgentRow): AgentRecord => ({
  agentId: r.agent_id,
  label: r.label,
  tokenSha256: r.token_sha256,
  createdAtMs: r.created_at_ms,
});

export const sessionFromRow = (r: SessionRow): SessionRecord => ({
  sessionId: r.session_id,
  agentId: r.agent_id,
  board: r.board,
  state: r.state,
  idleSeconds: r.idle_seconds,
  createdAtMs: r.created_at_ms,
  expiresAtMs: r.expires_at_ms,
  endedAtMs: r.ended_at_ms,
  lastHeartbeatAtMs: r.last_heartbeat_at_ms,
  ...instanceField(r.board, r.instance),
});

/** UART metadata as stored beside the raw bytes (the bytes go in their own BLOB column). */
interface UartJson {
  droppedBytes: number;
  timeBase: 'simulated' | 'wall';
  clockSource?: string;
  chunks: UartRecord['chunks'];
  chunksOmitted: number;
}

export function uartJson(u: UartRecord): string {
  const j: UartJson = { droppedBytes: u.droppedBytes, timeBase: u.timeBase, clockSource: u.clockSource, chunks: u.chunks, chunksOmitted: u.chunksOmitted };
  return JSON.stringify(j);
}

export function jobFromRow(r: JobRow): JobRecord {
  let uart: UartRecord | null = null;
  if (r.uart_json !== null) {
    const meta = JSON.parse(r.uart_json) as UartJson;
    uart = { ...meta, bytes: new Uint8Array(r.uart_bytes ?? new Uint8Array(0)) };
  }
  return {
    jobId: r.job_id,
    agentId: r.agent_id,
    board: r.board,
    sessionId: r.session_id,
    state: r.state,
    firmware: { sha256: r.firmware_sha256, sizeBytes: r.firmware_size_bytes, elf: JSON.parse(r.elf_json) as ElfSummary },
    uartSeconds: r.uart_seconds,
    uart,
    stop: r.stop_json === null ? null : (JSON.parse(r.stop_json) as StopRecord),
    failure: r.failure_kind === null ? null : { kind: r.failure_kind as NonNullable<JobRecord['failure']>['kind'], message: r.failure_message ?? '' },
    createdAtMs: r.created_at_ms,
    startedAtMs: r.started_at_ms,
    runningAtMs: r.running_at_ms,
    finishedAtMs: r.finished_at_ms,
    flashMs: r.flash_ms,
    runMs: r.run_ms,
    workerId: r.worker_id,
    cancelReason: r.cancel_reason,
    ...instanceField(r.board, r.instance),
  };
}
