import { isoFromMs } from '../../core/clock.js';
import type { JobWithAgent, LeaseWithAgent, SessionWithAgent } from '../store/bench-store.js';
import type { BenchSnapshot, BoardStatus } from './bench-snapshot.js';
import type { AdminBody, BoardBody, BoardHealthBody, StatsBody } from './bench-schemas.js';
import type { ResolvedBoard } from './board-backends.js';
import { isoOrNull } from './bench-views.js';

/**
 * One board as it stands: the board list, the pages' snapshot, stats and the admin view are all
 * projections of this (pure functions below), so they cannot disagree about a board.
 */
export interface BoardState {
  resolved: ResolvedBoard;
  status: BoardStatus;
  lease: LeaseWithAgent | undefined;
  queued: number;
}

/** A board's state from its backend, its lease, its jobs and whether an administrator is checking it. */
export function boardState(
  resolved: ResolvedBoard,
  lease: LeaseWithAgent | undefined,
  activity: { queued: number; active: number } | undefined,
  healthCheckRunning: boolean,
): BoardState {
  const act = activity ?? { queued: 0, active: 0 };
  const busy = act.active > 0 || healthCheckRunning;
  const status: BoardStatus = !resolved.backend ? 'offline' : busy ? 'busy' : lease ? 'leased' : 'free';
  return { resolved, status, lease, queued: act.queued };
}

/** `GET /api/v1/boards`. */
export function boardBody({ resolved, status, lease, queued }: BoardState): BoardBody {
  const { board } = resolved;
  return {
    id: board.id,
    name: board.name,
    description: board.description,
    mcu: {
      id: board.mcu.id,
      name: board.mcu.name,
      architecture: board.mcu.architecture,
      core: board.mcu.core,
      clock_hz: board.mcu.clockHz,
      memory: board.mcu.memory.map((m) => ({ name: m.name, kind: m.kind, start: m.start, size_bytes: m.sizeBytes })),
    },
    backend: resolved.backendName,
    status,
    offline_reason: resolved.offlineReason,
    lease_expires_at: lease?.expiresAtMs != null ? isoFromMs(lease.expiresAtMs) : null,
    queued_jobs: queued,
  };
}

/** A board on the pages and in `GET /api/v1/stats`. */
export function snapshotBoard({ resolved, status, lease, queued }: BoardState): BenchSnapshot['boards'][number] {
  return {
    id: resolved.board.id,
    name: resolved.board.name,
    description: resolved.board.description,
    mcu: resolved.board.mcu.name,
    architecture: resolved.board.mcu.architecture,
    backend: resolved.backendName,
    status,
    offlineReason: resolved.offlineReason,
    leasedBy: lease?.agentLabel ?? null,
    leaseExpiresAt: lease?.expiresAtMs != null ? isoFromMs(lease.expiresAtMs) : null,
    queuedJobs: queued,
  };
}

/** `GET /api/v1/stats`: the snapshot in the interface's names. */
export function statsBody(s: BenchSnapshot): StatsBody {
  return {
    generated_at: s.generatedAt,
    version: s.version,
    boards: s.boards.map((b) => ({
      id: b.id,
      name: b.name,
      description: b.description,
      mcu: b.mcu,
      architecture: b.architecture,
      backend: b.backend,
      status: b.status,
      offline_reason: b.offlineReason,
      leased_by: b.leasedBy,
      lease_expires_at: b.leaseExpiresAt,
      queued_jobs: b.queuedJobs,
    })),
    recent_activity: s.recentActivity.map((a) => ({ job_id: a.jobId, board: a.board, agent_label: a.agentLabel, state: a.state, at: a.at })),
    totals: {
      agents: s.totals.agents,
      sessions_open: s.totals.sessionsOpen,
      jobs_total: s.totals.jobsTotal,
      jobs_by_state: s.totals.jobsByState,
      waitlist: s.totals.waitlist,
    },
  };
}

/** A board in `GET /admin`, with the health its backend keeps (null when none). */
export function adminBoard({ resolved, status, lease, queued }: BoardState, health: BoardHealthBody | null): AdminBody['boards'][number] {
  return {
    id: resolved.board.id,
    backend: resolved.backendName,
    status,
    offline_reason: resolved.offlineReason,
    lease: lease
      ? {
          holder_kind: lease.holder.kind,
          session_id: lease.holder.kind === 'session' ? lease.holder.sessionId : null,
          job_id: lease.holder.kind === 'job' ? lease.holder.jobId : null,
          agent_id: lease.agentId,
          agent_label: lease.agentLabel,
          expires_at: isoOrNull(lease.expiresAtMs),
        }
      : null,
    queued_jobs: queued,
    health,
  };
}

/** An open session in `GET /admin`. */
export function adminSession(s: SessionWithAgent): AdminBody['sessions'][number] {
  return {
    session_id: s.sessionId,
    agent_id: s.agentId,
    agent_label: s.agentLabel,
    board: s.board,
    idle_seconds: s.idleSeconds,
    created_at: isoFromMs(s.createdAtMs),
    expires_at: isoFromMs(s.expiresAtMs),
    last_heartbeat_at: isoOrNull(s.lastHeartbeatAtMs),
  };
}

/** A recent job or failure in `GET /admin`. */
export function adminJob(j: JobWithAgent): AdminBody['recent_jobs'][number] {
  return {
    job_id: j.jobId,
    agent_id: j.agentId,
    agent_label: j.agentLabel,
    board: j.board,
    state: j.state,
    created_at: isoFromMs(j.createdAtMs),
    finished_at: isoOrNull(j.finishedAtMs),
    failure: j.failure,
  };
}
