import type { LeaseWithAgent } from '../../storage/bench/bench-store.js';
import type { ResolvedBoard } from '../../../harness/board-resolution.js';

/** A board as the bench lists it. */
export type BoardStatus = 'free' | 'leased' | 'busy' | 'offline';

/**
 * One board as it stands: the board list, the pages' snapshot, stats and the admin view are all
 * projections of this (views/board-views.ts), so they cannot disagree about a board.
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


/** A board's session queue on every replica (decision 0555): how many wait, and the caller's place (1: next), null when it does not wait. */
export interface BoardQueue {
  board: string;
  waiting: number;
  position: number | null;
}
