import { isoFromMs } from '../../../core/clock.js';
import type { JobWithAgent, LeaseWithAgent, SessionWithAgent } from '../../storage/bench/bench-store.js';
import type { BenchSnapshot, BoardStatus } from './bench-snapshot.js';
import type { AdminBody, BoardBody, BoardHealthBody, StatsBody } from '../../../wire/bench/bench-schemas.js';
import type { ResolvedBoard } from '../../../harness/board-resolution.js';
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
  /** The pool's instances when it has more than one (decision 0510); absent for a pool of one. */
  pool?: PoolView;
}

/** One instance of a pool as the views show it. */
export interface InstanceView {
  instance: string;
  status: BoardStatus;
  /** The workers reporting it (one, unless a pool of one is served by several). */
  workers: Array<{ workerId: string; label: string; online: boolean }>;
  /** The label of the agent holding it, if any. */
  heldBy: string | null;
  /** Why it is offline (its quarantine first), else null. */
  offlineReason: string | null;
  quarantined: boolean;
}

/** A pool's instances, counted by status (busy counts an instance running a job, leased or not). */
export interface PoolView {
  total: number;
  free: number;
  busy: number;
  leased: number;
  offline: number;
  /** Quarantined instances (decision 0551), counted among the offline too. */
  quarantined: number;
  instances: InstanceView[];
}

/**
 * A pool's view from its instances (decisions 0510, 0551): an instance is offline while quarantined
 * or unless an online worker reports it available; a quarantined one a session still holds shows
 * who holds it (the session's jobs wait for a release).
 */
export function poolView(
  instances: ReadonlyArray<{
    instance: string;
    workers: ReadonlyArray<{ workerId: string; label: string; online: boolean; available: boolean; reason: string | null }>;
    quarantine?: { reason: string };
  }>,
  leases: ReadonlyMap<string, LeaseWithAgent>,
  activity: ReadonlyMap<string, { queued: number; active: number }>,
): PoolView {
  const views = instances.map((i): InstanceView => {
    const lease = leases.get(i.instance);
    const online = i.workers.some((w) => w.online && w.available);
    const offline = !online || i.quarantine !== undefined;
    const status: BoardStatus = offline ? 'offline' : (activity.get(i.instance)?.active ?? 0) > 0 ? 'busy' : lease ? 'leased' : 'free';
    const silent = i.workers.every((w) => !w.online);
    const offlineReason = !offline
      ? null
      : (i.quarantine?.reason ??
        (silent ? `its worker ${i.workers.map((w) => w.label).join(', ')} is not answering` : (i.workers.find((w) => w.online)?.reason ?? 'its worker reports it unavailable')));
    return {
      instance: i.instance,
      status,
      workers: i.workers.map(({ workerId, label, online: on }) => ({ workerId, label, online: on })),
      heldBy: lease?.agentLabel ?? null,
      offlineReason,
      quarantined: i.quarantine !== undefined,
    };
  });
  const count = (s: BoardStatus) => views.filter((v) => v.status === s).length;
  return {
    total: views.length,
    free: count('free'),
    busy: count('busy'),
    leased: count('leased'),
    offline: count('offline'),
    quarantined: views.filter((v) => v.quarantined).length,
    instances: views,
  };
}

/** The board's status from its pool's: free while an instance is free, else leased, busy, offline in that order. */
export function poolStatus(pool: PoolView, boardStatus: BoardStatus): BoardStatus {
  if (boardStatus === 'offline') return 'offline';
  for (const s of ['free', 'leased', 'busy'] as const) if (pool[s] > 0) return s;
  return 'offline';
}

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

/** A board in `GET /admin`, with the health its backend keeps (null when none) and who waits for it (decision 0605). */
export function adminBoard(
  { resolved, status, lease, queued, pool }: BoardState,
  health: BoardHealthBody | null,
  waiting: AdminBody['boards'][number]['waiting'],
): AdminBody['boards'][number] {
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
