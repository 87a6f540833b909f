import { isoFromMs } from '../../../core/clock.js';
import type { JobWithAgent, SessionWithAgent } from '../../storage/bench/bench-store.js';
import type { BenchSnapshot } from './bench-snapshot.js';
import type { AdminBody, BoardBody, BoardHealthBody, StatsBody } from '../../../wire/bench/bench-schemas.js';
import type { AdminOverview, BoardWaiter } from '../domain/bench-status.js';
import type { BoardQueue, BoardState, PoolView } from '../domain/board-state.js';
import type { BoardQueueBody } from '../../../wire/bench/job-answer-schemas.js';
import { healthBody, isoOrNull } from './bench-views.js';

/**
 * Boards as the answers and the pages show them: each a projection of a `BoardState`
 * (domain/board-state.ts), so the board list, the snapshot, stats and the admin view cannot
 * disagree about a board.
 */

/** The `instances` field of `GET /api/v1/boards` and `/stats` (an extension, decision 0510). */
export function poolBody(pool: PoolView) {
  return {
    total: pool.total,
    free: pool.free,
    busy: pool.busy,
    leased: pool.leased,
    offline: pool.offline,
    quarantined: pool.quarantined,
    list: pool.instances.map((i) => ({
      instance: i.instance,
      status: i.status,
      offline_reason: i.offlineReason,
      quarantined: i.quarantined,
      workers: i.workers.map((w) => ({ worker_id: w.workerId, label: w.label, online: w.online })),
      held_by: i.heldBy,
    })),
  };
}

/** `GET /api/v1/boards`. */
export function boardBody({ resolved, status, lease, queued, pool }: BoardState): BoardBody {
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
    ...(pool ? { instances: poolBody(pool) } : {}),
  };
}

/** A board on the pages and in `GET /api/v1/stats`. */
export function snapshotBoard({ resolved, status, lease, queued, pool }: BoardState): BenchSnapshot['boards'][number] {
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
    ...(pool ? { pool } : {}),
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
      ...(b.pool ? { instances: poolBody(b.pool) } : {}),
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

/** `GET /admin`: what an administrator sees. */
export function adminBody(overview: AdminOverview): AdminBody {
  const { counts } = overview;
  return {
    generated_at: isoFromMs(overview.nowMs),
    boards: overview.boards.map(({ state, health, waiting }) => adminBoard(state, health ? healthBody(health) : null, waiting.map(waiterBody))),
    sessions: overview.sessions.map(adminSession),
    recent_jobs: overview.recentJobs.map(adminJob),
    recent_failures: overview.recentFailures.map(adminJob),
    counts: {
      agents: counts.agents,
      sessions_open: counts.sessionsOpen,
      jobs_total: counts.jobsTotal,
      jobs_by_state: counts.jobsByState,
      waitlist: overview.waitlist,
    },
  };
}

type AdminWaiter = AdminBody['boards'][number]['waiting'][number];

/** A session request waiting for a board, in `GET /admin` (decision 0605). */
function waiterBody(w: BoardWaiter): AdminWaiter {
  return { agent_id: w.agentId, agent_label: w.agentLabel, queue: w.queue, position: w.position, since: isoFromMs(w.sinceMs) };
}

/** A board in `GET /admin`, with the health its backend keeps (null when none) and who waits for it (decision 0605). */
function adminBoard({ resolved, status, lease, queued, pool }: BoardState, health: BoardHealthBody | null, waiting: AdminWaiter[]): AdminBody['boards'][number] {
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
    ...(pool ? { instances: poolBody(pool) } : {}),
    waiting,
  };
}

/** An open session in `GET /admin`. */
function adminSession(s: SessionWithAgent): AdminBody['sessions'][number] {
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

/** `GET /api/v1/boards/{board}/queue` (decision 0555). */
export function boardQueueBody(queue: BoardQueue): BoardQueueBody {
  return { board: queue.board, waiting: queue.waiting, position: queue.position };
}
